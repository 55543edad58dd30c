/// Why the quota ledger refused a configuration or an argument. (A reservation the budget cannot
/// pay is ``TollgateError/quotaExceeded(endpoint:cost:remaining:resetsAt:)``, not this.)
public enum QuotaLedgerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The cost table is inconsistent: the reason names the bucket or endpoint.
    case invalidConfiguration(String)
    /// The bucket is not in the configuration.
    case unknownBucket(String)
    /// A reservation asked for a negative cost.
    case negativeCost(endpoint: String, cost: Int)
    /// A daily limit below zero.
    case negativeLimit(bucket: String, limit: Int)
    /// A cost above ``QuotaLimits/maximumUnits``.
    case costTooLarge(endpoint: String, cost: Int)
    /// A daily limit above ``QuotaLimits/maximumUnits``.
    case limitTooLarge(bucket: String, limit: Int)

    public var description: String {
        switch self {
        case .invalidConfiguration(let reason):
            "Invalid quota configuration: \(reason)."
        case .unknownBucket(let bucket):
            "Unknown quota bucket \(bucket): it has no daily limit in the configuration."
        case .negativeCost(let endpoint, let cost):
            "A quota cost cannot be negative: \(endpoint) was given \(cost)."
        case .negativeLimit(let bucket, let limit):
            "A daily limit cannot be negative: \(bucket) was given \(limit)."
        case .costTooLarge(let endpoint, let cost):
            "A quota cost can be at most \(QuotaLimits.maximumUnits) units: \(endpoint) was given \(cost). Nothing was charged."
        case .limitTooLarge(let bucket, let limit):
            "A daily limit can be at most \(QuotaLimits.maximumUnits) units: \(bucket) was given \(limit). The limit was not changed."
        }
    }
}
