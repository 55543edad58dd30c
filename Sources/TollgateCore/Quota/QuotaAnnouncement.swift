import Foundation

/// What a server announced about one of the ledger's buckets, read from a network answer's fields
/// (never a cached one): the units it says are left, and when they come back.
public struct QuotaAnnouncement: Sendable, Hashable {
    /// The bucket the announcement is about.
    public var bucket: String
    /// The endpoint whose answer carried it.
    public var endpoint: String
    /// The bucket's configured limit, used when its row does not exist yet.
    public var configuredLimit: Int
    /// The bucket's window.
    public var window: QuotaWindow
    /// The units the server says are left in its window.
    public var remaining: Int
    /// When the server says its window resets, if it says.
    public var resetsAt: Date?
    /// The time of the answer.
    public var at: Date

    /// Creates an announcement.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - endpoint: The endpoint whose answer carried it.
    ///   - configuredLimit: The bucket's configured limit.
    ///   - window: The bucket's window.
    ///   - remaining: The units the server says are left.
    ///   - resetsAt: When the server's window resets.
    ///   - at: The time of the answer.
    public init(
        bucket: String, endpoint: String, configuredLimit: Int, window: QuotaWindow, remaining: Int, resetsAt: Date?,
        at: Date
    ) {
        self.bucket = bucket
        self.endpoint = endpoint
        self.configuredLimit = configuredLimit
        self.window = window
        self.remaining = remaining
        self.resetsAt = resetsAt
        self.at = at
    }
}

/// What the ledger did with an announcement.
public struct QuotaAnnouncementOutcome: Sendable, Hashable {
    /// The units the ledger added to its count to follow the server down (an `announced` event);
    /// zero when the server left more than the ledger counted (the ledger never follows it up).
    public var unitsFollowed: Int
    /// Whether the announced reset moved the window's end.
    public var movedReset: Bool
    /// The window afterwards.
    public var period: QuotaPeriod
    /// The units the window used afterwards.
    public var unitsUsed: Int
    /// The bucket's limit in force.
    public var limit: Int

    /// The units left afterwards.
    public var remaining: Int { QuotaLimits.remaining(limit: limit, used: unitsUsed) }

    /// Creates an outcome.
    /// - Parameters:
    ///   - unitsFollowed: The units added to follow the server down.
    ///   - movedReset: Whether the window's end moved.
    ///   - period: The window afterwards.
    ///   - unitsUsed: The units used afterwards.
    ///   - limit: The limit in force.
    public init(unitsFollowed: Int, movedReset: Bool, period: QuotaPeriod, unitsUsed: Int, limit: Int) {
        self.unitsFollowed = unitsFollowed
        self.movedReset = movedReset
        self.period = period
        self.unitsUsed = unitsUsed
        self.limit = limit
    }
}
