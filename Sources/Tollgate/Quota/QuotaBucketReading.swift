import Foundation

/// What this process's latest admission read of a bucket: its limit, what remained after the
/// charge (or at the refusal) and the Pacific day. Kept in memory by ``QuotaLedger`` so that a
/// caller can describe the bucket on an answer (the proxy's `RateLimit` field) without another
/// read of the store. Other processes' charges since then are not in it.
public struct QuotaBucketReading: Sendable, Hashable {
    /// The bucket.
    public var bucket: String
    /// Its daily limit in force.
    public var limit: Int
    /// Units left that day when it was read (0 while the server's exhaustion mark holds).
    public var remaining: Int
    /// The Pacific day it describes.
    public var day: PacificDay
    /// The bucket's window it describes: the Pacific day unless the bucket counts another window.
    public var period: QuotaPeriod

    /// Creates a reading.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - limit: Its daily limit.
    ///   - remaining: Units left that day.
    ///   - day: The Pacific day.
    ///   - period: The bucket's window; the Pacific day when nil.
    public init(bucket: String, limit: Int, remaining: Int, day: PacificDay, period: QuotaPeriod? = nil) {
        self.period = period ?? QuotaPeriod(day)
        self.bucket = bucket
        self.limit = limit
        self.remaining = remaining
        self.day = day
    }

    /// When the bucket's window ends: the next midnight, Pacific time, for a daily bucket.
    public var resetsAt: Date { period.end }
}
