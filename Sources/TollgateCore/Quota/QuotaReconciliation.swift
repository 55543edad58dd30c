/// What aligning a bucket's day with the provider's own count changed.
public struct QuotaReconciliation: Sendable, Hashable {
    /// The Pacific day.
    public var day: PacificDay
    /// The bucket.
    public var bucket: String
    /// Units the ledger counted before.
    public var countedBefore: Int
    /// Units the provider says were used, the ledger's count now.
    public var used: Int

    /// The adjustment recorded: positive when the provider counted more.
    public var adjustment: Int { used - countedBefore }

    /// Creates a reconciliation.
    /// - Parameters:
    ///   - day: The Pacific day.
    ///   - bucket: The bucket.
    ///   - countedBefore: Units counted before.
    ///   - used: Units the provider counted.
    public init(day: PacificDay, bucket: String, countedBefore: Int, used: Int) {
        self.day = day
        self.bucket = bucket
        self.countedBefore = countedBefore
        self.used = used
    }
}

/// Units charged in one window of time, for a burn rate.
public struct QuotaBurn: Sendable, Hashable {
    /// The bucket.
    public var bucket: String
    /// Units charged, net of refunds, in the window (never below zero).
    public var units: Int
    /// The window's length in seconds.
    public var windowSeconds: Int

    /// Creates a burn.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - units: Net units charged in the window.
    ///   - windowSeconds: The window's length.
    public init(bucket: String, units: Int, windowSeconds: Int) {
        self.bucket = bucket
        self.units = units
        self.windowSeconds = windowSeconds
    }

    /// Units per hour at this rate.
    public var unitsPerHour: Double {
        windowSeconds > 0 ? Double(units) * 3600 / Double(windowSeconds) : 0
    }
}
