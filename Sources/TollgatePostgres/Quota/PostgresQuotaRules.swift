import TollgateStore

/// The argument checks the quota operations make before touching the database, with the same
/// messages as `SQLiteStore`'s, so both stores refuse the same calls the same way.
enum PostgresQuotaRules {
    /// The name `quota_events` gives to events about a whole bucket.
    static let wholeBucket = "*"

    static func validateEndpoint(_ endpoint: String) throws {
        if endpoint.isEmpty {
            throw StoreError.invalidArgument("an endpoint name must not be empty")
        }
        if endpoint == wholeBucket {
            throw StoreError.invalidArgument("'*' is not an endpoint name: the quota ledger uses it for whole-bucket events")
        }
    }

    static func validateCost(_ cost: Int, endpoint: String, bucket: String? = nil) throws {
        let place = bucket.map { " in \($0)" } ?? ""
        guard cost >= 0 else {
            throw StoreError.invalidArgument("a quota cost cannot be negative (\(endpoint) costs \(cost)\(place))")
        }
        guard cost <= QuotaLimits.maximumUnits else {
            throw StoreError.invalidArgument(
                "a quota cost must be 0 to 1,000,000,000,000 units (\(endpoint) costs \(cost)\(place))"
            )
        }
    }

    static func validateLimit(_ limit: Int, bucket: String) throws {
        guard limit >= 0 else {
            throw StoreError.invalidArgument("a daily limit cannot be negative (\(bucket): \(limit))")
        }
        guard limit <= QuotaLimits.maximumUnits else {
            throw StoreError.invalidArgument("a daily limit must be 0 to 1,000,000,000,000 units (\(bucket): \(limit))")
        }
    }

    /// A stored limit brought into range, as SQLite's store reads one: a row edited by hand may
    /// hold any number, and it is read as the nearest allowed one rather than refused.
    static func clamped(_ units: Int) -> Int {
        min(max(units, 0), QuotaLimits.maximumUnits)
    }

    /// The warning levels a charge crossed first today: reached now, above what was reported.
    static func warningsCrossed(percents: [Int], usedAfter: Int, limit: Int, alreadyWarned: Int) -> [Int] {
        guard limit > 0 else { return [] }
        return percents
            .filter { (1...100).contains($0) && usedAfter * 100 >= $0 * limit && $0 > alreadyWarned }
            .sorted()
    }
}
