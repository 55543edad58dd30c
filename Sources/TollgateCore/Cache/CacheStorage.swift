import Foundation

/// The store operations of the ETag cache. Each method is one transaction.
///
/// Keys arrive as digests and URLs arrive redacted: the store never sees a secret. Every write
/// first applies the ``CacheActivity`` it is given (buffered LRU touches and statistics), so a
/// backend that evicts sees every use the service has recorded.
public protocol CacheStorage: Sendable {
    /// The longest resource key, in UTF-8 bytes, this store can index, or nil when it has no
    /// limit. A request whose key is longer is neither looked up, stored nor coalesced: it
    /// passes the cache as an uncacheable one does, and is charged as any other.
    var maximumResourceKeyBytes: Int? { get }

    /// Reads one stored response of a resource: the candidates' metadata, the variant
    /// `selectVariant` picks, and that variant's body.
    /// - Parameters:
    ///   - resourceKey: The resource's digest.
    ///   - validatedSinceMs: Entries validated before this time are expired and never returned.
    ///   - selectVariant: Picks the entry, by id, among the resource's live variants; nil for none.
    /// - Returns: The chosen entry with its body, or nil.
    /// - Throws: A storage error.
    func cachedEntry(
        resourceKey: String, validatedSinceMs: Int64,
        selectVariant: @escaping @Sendable ([CacheEntryMetadata]) -> Int64?
    ) async throws -> CacheEntry?

    /// Stores a response, or replaces the entry with the same keys, then enforces `retention`.
    ///
    /// Variants of the same resource stored under a different `Vary` are removed. The new entry is
    /// never the one evicted.
    /// - Parameters:
    ///   - entry: The response.
    ///   - retention: The limits to enforce.
    ///   - activity: Buffered touches and statistics to apply first.
    ///   - bookkeeping: The ledger's writes that follow the answer, made in the same transaction.
    /// - Returns: The stored entry, what was removed, and the bookkeeping's result.
    /// - Throws: A storage error; nothing is changed then.
    func storeCacheEntry(
        _ entry: NewCacheEntry, retention: CacheRetention, activity: CacheActivity, bookkeeping: AnswerBookkeeping
    ) async throws -> CacheStoreResult

    /// Applies a `304` to one stored entry, chosen by `revise` among the resource's live variants:
    /// its headers, validators, freshness, validation and access times change; its body does not.
    /// The day's statistics are left to the caller, which buffers the revalidation's count with its
    /// other activity (one page less in every revision's transaction).
    /// - Parameters:
    ///   - resourceKey: The resource's digest.
    ///   - validatedSinceMs: Expired entries are not candidates.
    ///   - activity: Buffered touches and statistics to apply first.
    ///   - bookkeeping: The ledger's writes that follow the `304`, made in the same transaction
    ///     whether or not an entry matches.
    ///   - revise: Returns the change to make, or nil when no entry matches the `304`.
    /// - Returns: The updated entry with its body (nil when nothing matched), and the bookkeeping's result.
    /// - Throws: A storage error; nothing is changed then.
    func reviseCacheEntry(
        resourceKey: String, validatedSinceMs: Int64, activity: CacheActivity, bookkeeping: AnswerBookkeeping,
        revise: @escaping @Sendable ([CacheEntryMetadata]) -> CacheRevision?
    ) async throws -> CacheRevisionResult

    /// Removes every variant of a resource (a `no-store` answer, an unstorable replacement).
    /// - Parameters:
    ///   - resourceKey: The resource's digest.
    ///   - activity: Buffered touches and statistics to apply first.
    /// - Returns: How many entries were removed.
    /// - Throws: A storage error.
    func removeCacheEntries(resourceKey: String, activity: CacheActivity) async throws -> Int

    /// Removes every entry stored for a URL, whatever its method, credential or variant: an unsafe
    /// method changed the resource.
    /// - Parameters:
    ///   - url: The redacted normalised URL.
    ///   - activity: Buffered touches and statistics to apply first.
    /// - Returns: How many entries were removed.
    /// - Throws: A storage error.
    func invalidateCacheEntries(url: String, activity: CacheActivity) async throws -> Int

    /// Writes buffered touches and statistics.
    /// - Parameter activity: What to write.
    /// - Throws: A storage error; nothing is written then.
    func recordCacheActivity(_ activity: CacheActivity) async throws

    /// Removes expired entries and evicts least recently used ones until the limits hold.
    /// - Parameters:
    ///   - retention: The limits.
    ///   - activity: Buffered touches and statistics to apply first.
    /// - Returns: What was removed.
    /// - Throws: A storage error.
    func pruneCache(retention: CacheRetention, activity: CacheActivity) async throws -> CachePruneResult

    /// Like ``pruneCache(retention:activity:)``, for an operator: the same transaction appends an
    /// `admin_events` row (subject `cache`, action `prune`) saying what was removed, even nothing.
    /// - Parameters:
    ///   - retention: The limits.
    ///   - activity: Buffered touches and statistics to apply first.
    ///   - at: The time recorded in the event.
    /// - Returns: What was removed.
    /// - Throws: A storage error; nothing is changed then.
    func pruneCache(retention: CacheRetention, activity: CacheActivity, recordedAt at: Date) async throws
        -> CachePruneResult

    /// Removes every stored response, or those of one endpoint, and appends an `admin_events` row
    /// (subject `cache`, action `clear`) in the same transaction: never a silent delete. Statistics
    /// are kept: they describe what happened, not what is stored.
    /// - Parameters:
    ///   - endpoint: One endpoint's entries, or nil for every entry.
    ///   - activity: Buffered touches and statistics to apply first.
    ///   - at: The time recorded in the event.
    /// - Returns: What was removed.
    /// - Throws: A storage error; nothing is changed then.
    func clearCache(endpoint: String?, activity: CacheActivity, at: Date) async throws -> CacheClearResult

    /// How many entries and body bytes the cache holds.
    /// - Returns: The totals.
    /// - Throws: A storage error.
    func cacheTotals() async throws -> CacheTotals

    /// Rows of the `cache_stats` view.
    /// - Parameter pacificDate: One Pacific date (`YYYY-MM-DD`), or nil for every day.
    /// - Returns: The rows, newest day first, then by endpoint.
    /// - Throws: A storage error.
    func cacheStatistics(pacificDate: String?) async throws -> [CacheDailyStatistics]

    /// Takes the coalescing lease on a resource unless another holder's lease is still running
    /// at `lease.startedMs`; the same holder's lease is renewed (a leader admitted again after a
    /// throttle wait keeps its lease running). One transaction.
    /// - Parameters:
    ///   - resourceKey: The resource's cache key.
    ///   - lease: The lease to take.
    /// - Returns: The lease in force afterwards: `lease` when it was taken, else the running one.
    /// - Throws: A storage error.
    func acquireCoalescingLease(resourceKey: String, lease: CoalescingLease) async throws -> CoalescingLease

    /// The coalescing lease on a resource, running or lapsed, if any.
    /// - Parameter resourceKey: The resource's cache key.
    /// - Returns: The lease, or nil when nobody leads a fetch of it.
    /// - Throws: A storage error.
    func coalescingLease(resourceKey: String) async throws -> CoalescingLease?

    /// Gives a coalescing lease back, if `holder` still holds it.
    /// - Parameters:
    ///   - resourceKey: The resource's cache key.
    ///   - holder: The leading request's token.
    /// - Throws: A storage error.
    func releaseCoalescingLease(resourceKey: String, holder: String) async throws
}

extension CacheStorage {
    /// No limit: SQLite indexes a text key of any length.
    public var maximumResourceKeyBytes: Int? { nil }

    /// Stores a response with no bookkeeping beside it. See
    /// ``storeCacheEntry(_:retention:activity:bookkeeping:)``.
    /// - Parameters:
    ///   - entry: The response.
    ///   - retention: The limits to enforce.
    ///   - activity: Buffered touches and statistics to apply first.
    /// - Returns: The stored entry and what was removed.
    /// - Throws: A storage error; nothing is changed then.
    public func storeCacheEntry(
        _ entry: NewCacheEntry, retention: CacheRetention, activity: CacheActivity
    ) async throws -> CacheStoreResult {
        try await storeCacheEntry(entry, retention: retention, activity: activity, bookkeeping: AnswerBookkeeping())
    }

    /// Applies a `304` with no bookkeeping beside it. See
    /// ``reviseCacheEntry(resourceKey:validatedSinceMs:activity:bookkeeping:revise:)``.
    /// - Parameters:
    ///   - resourceKey: The resource's digest.
    ///   - validatedSinceMs: Expired entries are not candidates.
    ///   - activity: Buffered touches and statistics to apply first.
    ///   - revise: Returns the change to make, or nil when no entry matches the `304`.
    /// - Returns: The updated entry with its body, or nil when nothing matched.
    /// - Throws: A storage error; nothing is changed then.
    public func reviseCacheEntry(
        resourceKey: String, validatedSinceMs: Int64, activity: CacheActivity,
        revise: @escaping @Sendable ([CacheEntryMetadata]) -> CacheRevision?
    ) async throws -> CacheEntry? {
        try await reviseCacheEntry(resourceKey: resourceKey, validatedSinceMs: validatedSinceMs, activity: activity,
                                   bookkeeping: AnswerBookkeeping(), revise: revise).entry
    }
}
