/// The range every quota number lives in: daily limits, costs and a day's usage.
///
/// A limit or a cost above ``maximumUnits`` is refused wherever it enters (the store, the quota
/// ledger, its configuration, the `tollgate` command), so the ledger's arithmetic never leaves
/// `Int64`: a day's usage never exceeds its limit, a hundred times the maximum (the warning
/// levels' percentages) is 10¹⁴, and millions of maximum-size events still sum far below
/// `Int64.max` (about 9.2 × 10¹⁸). A trillion units is far above any real API's daily quota
/// (YouTube's is 10,000 by default, a few million after an extension).
public enum QuotaLimits {
    /// The largest daily limit or cost, in units: 1,000,000,000,000.
    public static let maximumUnits = 1_000_000_000_000

    /// The units a limit or a cost may take: zero to ``maximumUnits``.
    public static let allowedUnits: ClosedRange<Int> = 0...maximumUnits

    /// What is left of `limit` after `used`, never below zero and never trapping, whatever the
    /// values (a file edited by hand can hold any integer).
    /// - Parameters:
    ///   - limit: The daily limit.
    ///   - used: The units used.
    /// - Returns: `max(limit - used, 0)`, saturated at `Int.max`.
    public static func remaining(limit: Int, used: Int) -> Int {
        let (difference, overflow) = limit.subtractingReportingOverflow(used)
        guard !overflow else { return used < 0 ? Int.max : 0 }
        return max(difference, 0)
    }

    /// `a + b`, saturated at `Int.min` and `Int.max` instead of trapping.
    package static func saturatingSum(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard overflow else { return sum }
        return b < 0 ? Int.min : Int.max
    }

    /// A stored limit brought into range: a file written before limits were checked may hold any
    /// number, and it is read as the nearest allowed one rather than refused.
    package static func clamped(_ units: Int) -> Int {
        min(max(units, 0), maximumUnits)
    }

    /// A short description of the allowed range, for error messages.
    package static let rangeDescription = "0 to 1,000,000,000,000"
}
