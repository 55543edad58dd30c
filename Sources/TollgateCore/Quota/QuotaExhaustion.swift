import Foundation

/// The server's word that a bucket's daily quota is spent, as recorded.
public struct QuotaExhaustion: Sendable, Hashable {
    /// The bucket closed.
    public var bucket: String
    /// When it opens again: the next Pacific midnight after the mark.
    public var until: Date
    /// Whether this call set the mark; false when the bucket was already marked for the day.
    public var isNew: Bool

    /// Creates an exhaustion record.
    /// - Parameters:
    ///   - bucket: The bucket closed.
    ///   - until: When it opens again.
    ///   - isNew: Whether this call set the mark.
    public init(bucket: String, until: Date, isNew: Bool) {
        self.bucket = bucket
        self.until = until
        self.isNew = isNew
    }
}
