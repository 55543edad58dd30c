/// A day, bucket and endpoint whose total in `quota_usage` differs from the sum of its events.
///
/// The ledger's invariant is that there are none; finding one means the file was edited by hand
/// or damaged.
public struct QuotaLedgerDiscrepancy: Sendable, Hashable {
    /// The Pacific date, as stored (`YYYY-MM-DD`).
    public var pacificDate: String
    /// The bucket.
    public var bucket: String
    /// The endpoint.
    public var endpoint: String
    /// The sum of the events' units (zero when there are none).
    public var eventUnits: Int
    /// The total in `quota_usage` (zero when there is no row).
    public var usageUnits: Int

    /// Creates a discrepancy.
    /// - Parameters:
    ///   - pacificDate: The Pacific date.
    ///   - bucket: The bucket.
    ///   - endpoint: The endpoint.
    ///   - eventUnits: The sum of the events' units.
    ///   - usageUnits: The stored total.
    public init(pacificDate: String, bucket: String, endpoint: String, eventUnits: Int, usageUnits: Int) {
        self.pacificDate = pacificDate
        self.bucket = bucket
        self.endpoint = endpoint
        self.eventUnits = eventUnits
        self.usageUnits = usageUnits
    }
}
