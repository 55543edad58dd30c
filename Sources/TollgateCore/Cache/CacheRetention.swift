/// The limits a store enforces after every write of the cache.
public struct CacheRetention: Sendable, Hashable {
    /// At most this many entries; the least recently used go first.
    public var maxEntries: Int
    /// At most this many body bytes in total; the least recently used go first.
    public var maxTotalBodyBytes: Int64
    /// Entries validated (stored or revalidated) before this time are expired and removed.
    public var expiredBeforeMs: Int64

    /// Creates limits.
    /// - Parameters:
    ///   - maxEntries: The entry capacity.
    ///   - maxTotalBodyBytes: The byte budget.
    ///   - expiredBeforeMs: The expiry cutoff (milliseconds since 1970).
    public init(maxEntries: Int, maxTotalBodyBytes: Int64, expiredBeforeMs: Int64) {
        self.maxEntries = maxEntries
        self.maxTotalBodyBytes = maxTotalBodyBytes
        self.expiredBeforeMs = expiredBeforeMs
    }
}

/// What enforcing the limits removed.
public struct CachePruneResult: Sendable, Hashable {
    /// Entries removed because they were older than the expiry cutoff.
    public var expired: Int
    /// Entries removed, least recently used first, to get under the entry or byte limit.
    public var evicted: Int

    /// Creates a result.
    /// - Parameters:
    ///   - expired: Expired entries removed.
    ///   - evicted: Entries evicted.
    public init(expired: Int = 0, evicted: Int = 0) {
        self.expired = expired
        self.evicted = evicted
    }
}

/// The outcome of storing a response.
public struct CacheStoreResult: Sendable, Hashable {
    /// The stored entry's metadata.
    public var entry: CacheEntryMetadata
    /// Whether it replaced an entry with the same keys.
    public var replaced: Bool
    /// What the limits removed in the same transaction.
    public var pruned: CachePruneResult
    /// What the bookkeeping written beside the entry did.
    public var bookkeeping: AnswerBookkeepingResult

    /// Creates a result.
    /// - Parameters:
    ///   - entry: The stored entry.
    ///   - replaced: Whether it replaced one.
    ///   - pruned: What the limits removed.
    ///   - bookkeeping: What the bookkeeping written beside it did.
    public init(entry: CacheEntryMetadata, replaced: Bool, pruned: CachePruneResult,
                bookkeeping: AnswerBookkeepingResult = AnswerBookkeepingResult()) {
        self.entry = entry
        self.replaced = replaced
        self.pruned = pruned
        self.bookkeeping = bookkeeping
    }
}

/// The outcome of applying a `304`.
public struct CacheRevisionResult: Sendable, Hashable {
    /// The updated entry with its body, or nil when no stored entry matched the `304`.
    public var entry: CacheEntry?
    /// What the bookkeeping written beside it did.
    public var bookkeeping: AnswerBookkeepingResult

    /// Creates a result.
    /// - Parameters:
    ///   - entry: The updated entry, or nil.
    ///   - bookkeeping: What the bookkeeping did.
    public init(entry: CacheEntry?, bookkeeping: AnswerBookkeepingResult = AnswerBookkeepingResult()) {
        self.entry = entry
        self.bookkeeping = bookkeeping
    }
}

/// How full the cache is, kept by triggers so no one counts the table.
public struct CacheTotals: Sendable, Hashable {
    /// Stored entries.
    public var entries: Int
    /// Stored body bytes.
    public var bodyBytes: Int64

    /// Creates totals.
    /// - Parameters:
    ///   - entries: Stored entries.
    ///   - bodyBytes: Stored body bytes.
    public init(entries: Int, bodyBytes: Int64) {
        self.entries = entries
        self.bodyBytes = bodyBytes
    }
}

/// One row of the `cache_stats` view: one endpoint on one Pacific day.
public struct CacheDailyStatistics: Sendable, Hashable {
    /// The Pacific date, `YYYY-MM-DD`.
    public var pacificDate: String
    /// The endpoint.
    public var endpoint: String
    /// The counts.
    public var counts: CacheStatisticsCounts
    /// (hits + revalidations + coalesced) / (hits + revalidations + coalesced + misses), rounded to
    /// 4 places; nil with no requests.
    public var hitRate: Double?

    /// Creates a row.
    /// - Parameters:
    ///   - pacificDate: The Pacific date.
    ///   - endpoint: The endpoint.
    ///   - counts: The counts.
    ///   - hitRate: The hit rate.
    public init(pacificDate: String, endpoint: String, counts: CacheStatisticsCounts, hitRate: Double?) {
        self.pacificDate = pacificDate
        self.endpoint = endpoint
        self.counts = counts
        self.hitRate = hitRate
    }
}
