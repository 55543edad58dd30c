/// What clearing the cache removed.
public struct CacheClearResult: Sendable, Hashable {
    /// Entries removed (their bodies went with them).
    public var entries: Int
    /// Body bytes removed.
    public var bodyBytes: Int64

    /// Creates a result.
    /// - Parameters:
    ///   - entries: Entries removed.
    ///   - bodyBytes: Body bytes removed.
    public init(entries: Int = 0, bodyBytes: Int64 = 0) {
        self.entries = entries
        self.bodyBytes = bodyBytes
    }
}
