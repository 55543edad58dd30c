/// The quota ledger's argument rules and their messages: the one copy both stores check before
/// they touch their database, so they refuse the same calls with the same words.
public enum QuotaRules {
    /// The name `quota_events` gives to events about a whole bucket (a limit, a reset, the
    /// server's exhausted mark): an endpoint of that name would be mistaken for them.
    public static let wholeBucket = "*"

    /// The detail of the charge of a call that carried a batch of single-ID requests: `batch of N IDs`.
    /// Written here and read back by ``batchIDs(inDetail:)``: one format, in one file.
    /// - Parameter ids: The IDs the call carried.
    /// - Returns: The detail.
    public static func batchDetail(ids: Int) -> String { "batch of \(ids) IDs" }

    /// A SQL `LIKE` pattern that selects the charges ``batchDetail(ids:)`` may have written; which
    /// of them really are is ``batchIDs(inDetail:)``'s to say.
    public static let batchDetailPattern = "batch of % IDs"

    /// The IDs a charge's detail says its call carried: `N` of ``batchDetail(ids:)``, nil for any
    /// other detail.
    /// - Parameter detail: A charge's detail.
    public static func batchIDs(inDetail detail: String) -> Int? {
        guard detail.hasPrefix("batch of "), detail.hasSuffix(" IDs") else { return nil }
        return Int(detail.dropFirst("batch of ".count).dropLast(" IDs".count)).flatMap { $0 > 0 ? $0 : nil }
    }

    /// Refuses an endpoint name the ledger cannot tell apart from its own records.
    /// - Parameter endpoint: The endpoint charged.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` for an empty name or `*`.
    public static func validateEndpoint(_ endpoint: String) throws(StoreRefusal) {
        if endpoint.isEmpty {
            throw .invalidArgument("an endpoint name must not be empty")
        }
        if endpoint == wholeBucket {
            throw .invalidArgument("'*' is not an endpoint name: the quota ledger uses it for whole-bucket events")
        }
    }

    /// Refuses a cost outside ``QuotaLimits/allowedUnits``.
    /// - Parameters:
    ///   - cost: The units one call costs.
    ///   - endpoint: The endpoint charged, for the message.
    ///   - bucket: The bucket of a further charge, for the message; nil for the main one.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` naming the endpoint, the cost and the bucket.
    public static func validateCost(_ cost: Int, endpoint: String, bucket: String? = nil) throws(StoreRefusal) {
        let place = bucket.map { " in \($0)" } ?? ""
        guard cost >= 0 else {
            throw .invalidArgument("a quota cost cannot be negative (\(endpoint) costs \(cost)\(place))")
        }
        guard cost <= QuotaLimits.maximumUnits else {
            throw .invalidArgument(
                "a quota cost must be \(QuotaLimits.rangeDescription) units (\(endpoint) costs \(cost)\(place))"
            )
        }
    }

    /// Refuses a configured daily limit outside ``QuotaLimits/allowedUnits``.
    /// - Parameters:
    ///   - limit: The limit the configuration gives the bucket.
    ///   - bucket: The bucket, for the message.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` naming the bucket and the limit.
    public static func validateLimit(_ limit: Int, bucket: String) throws(StoreRefusal) {
        guard limit >= 0 else {
            throw .invalidArgument("a daily limit cannot be negative (\(bucket): \(limit))")
        }
        guard limit <= QuotaLimits.maximumUnits else {
            throw .invalidArgument("a daily limit must be \(QuotaLimits.rangeDescription) units (\(bucket): \(limit))")
        }
    }

    /// Refuses a limit an operator sets (`tollgate quota set`) outside ``QuotaLimits/allowedUnits``.
    /// - Parameter limit: The new limit.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` naming the limit.
    public static func validateNewLimit(_ limit: Int) throws(StoreRefusal) {
        guard limit >= 0 else { throw .invalidArgument("a daily limit cannot be negative (\(limit))") }
        guard limit <= QuotaLimits.maximumUnits else {
            throw .invalidArgument("a daily limit must be \(QuotaLimits.rangeDescription) units, not \(limit)")
        }
    }

    /// Refuses a provider's count of used units outside ``QuotaLimits/allowedUnits``.
    /// - Parameter used: The units the provider says were used.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` naming the count.
    public static func validateReconciledCount(_ used: Int) throws(StoreRefusal) {
        guard QuotaLimits.allowedUnits.contains(used) else {
            throw .invalidArgument("a reconciled count must be 0 to \(QuotaLimits.maximumUnits) units, not \(used)")
        }
    }

    /// The refusal of a refund whose reservation does not exist.
    /// - Parameter reservationID: The id asked for.
    /// - Returns: The refusal, for the store to throw.
    public static func unknownReservation(_ reservationID: Int64) -> StoreRefusal {
        .invalidArgument("no quota reservation has id \(reservationID)")
    }

    /// The warning levels a charge crossed first today: reached now, above what was reported.
    ///
    /// In range (0 ≤ `usedAfter` ≤ `limit` ≤ ``QuotaLimits/maximumUnits``, levels 1…100) both
    /// products stay below 10¹⁵.
    /// - Parameters:
    ///   - percents: The configured warning levels, in percent.
    ///   - usedAfter: The bucket's units used after the charge.
    ///   - limit: The bucket's limit.
    ///   - alreadyWarned: The highest level already reported today (0 for none).
    /// - Returns: The levels crossed, ascending; empty for a limit of zero.
    public static func warningsCrossed(percents: [Int], usedAfter: Int, limit: Int, alreadyWarned: Int) -> [Int] {
        guard limit > 0 else { return [] }
        return percents
            .filter { (1...100).contains($0) && usedAfter * 100 >= $0 * limit && $0 > alreadyWarned }
            .sorted()
    }
}
