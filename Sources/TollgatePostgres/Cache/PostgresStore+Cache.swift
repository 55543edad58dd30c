import Foundation
import PostgresNIO
import TollgateCore

/// The ETag cache over PostgreSQL: metadata in `cache_entries`, bodies apart in `cache_bodies`
/// (`bytea`), so a `304` or an LRU touch never rewrites a body. Every machine of a fleet shares it.
///
/// Times here are the caller's, as the protocol passes them (`nowMs`, `validatedSinceMs`, a
/// lease's `startedMs`): HTTP freshness is computed by the cache service from its own clock.
/// When two machines store the same response, the one stored later wins, never the older one.
extension PostgresStore: CacheStorage {
    /// 2,048 bytes. A B-tree index row holds at most 2,704 bytes (a third of a page, less its
    /// header), and the key is indexed three ways: with the variant key (64 bytes more) in
    /// `cache_entries`, alone as the lease's key, and its URL in `cache_entries_by_url`. Past it,
    /// the lease's insert failed, and with it the whole request: a 6 KB URL got a store error
    /// instead of an answer. Such a request now passes uncached.
    public var maximumResourceKeyBytes: Int? { 2_048 }

    /// Reads one stored response of a resource: the variant `selectVariant` picks, with its body.
    /// - Parameters:
    ///   - resourceKey: The resource's digest.
    ///   - validatedSinceMs: Entries validated before this time are expired and never returned.
    ///   - selectVariant: Picks the entry, by id, among the resource's live variants.
    /// - Returns: The chosen entry with its body, or nil.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func cachedEntry(
        resourceKey: String, validatedSinceMs: Int64,
        selectVariant: @escaping @Sendable ([CacheEntryMetadata]) -> Int64?
    ) async throws -> CacheEntry? {
        try await withConnection("reading a cached response") { [self] connection in
            let candidates = try await cacheCandidates(
                connection, resourceKey: resourceKey, validatedSinceMs: validatedSinceMs
            )
            guard !candidates.isEmpty, let id = selectVariant(candidates),
                  let metadata = candidates.first(where: { $0.id == id }),
                  let body = try await cacheBody(connection, entryID: id)
            else { return nil }
            return CacheEntry(metadata: metadata, body: body)
        }
    }

    /// Stores a response, or replaces the entry with the same keys unless that one is newer, then
    /// enforces `retention` (never evicting the new entry).
    /// - Parameters:
    ///   - entry: The response.
    ///   - retention: The limits to enforce.
    ///   - activity: Buffered touches and statistics to apply first.
    ///   - bookkeeping: The ledger's writes that follow the answer, in the same transaction.
    /// - Returns: The entry in force, what was removed, and the bookkeeping's result.
    /// - Throws: ``PostgresStoreError`` when the server fails; nothing is changed then.
    public func storeCacheEntry(
        _ entry: NewCacheEntry, retention: CacheRetention, activity: CacheActivity, bookkeeping: AnswerBookkeeping
    ) async throws -> CacheStoreResult {
        try await inTransaction("storing a cached response") { [self] connection in
            try await recordCacheActivity(connection, activity)
            let (metadata, replaced, _) = try await upsertCacheEntry(connection, entry)
            let pruned = try await enforceCacheRetention(connection, retention, keeping: metadata.id)
            let booked = try await record(connection, bookkeeping)
            return CacheStoreResult(entry: metadata, replaced: replaced, pruned: pruned, bookkeeping: booked)
        }
    }

    /// Applies a `304` to the stored entry `revise` chooses: metadata only, never the body.
    /// - Parameters:
    ///   - resourceKey: The resource's digest.
    ///   - validatedSinceMs: Expired entries are not candidates.
    ///   - activity: Buffered touches and statistics to apply first.
    ///   - bookkeeping: The ledger's writes that follow the `304`, in the same transaction whether or
    ///     not an entry matches.
    ///   - revise: Returns the change to make, or nil when no entry matches the `304`.
    /// - Returns: The updated entry with its body (nil when nothing matched), and the bookkeeping's result.
    /// - Throws: ``PostgresStoreError`` when the server fails; nothing is changed then.
    public func reviseCacheEntry(
        resourceKey: String, validatedSinceMs: Int64, activity: CacheActivity, bookkeeping: AnswerBookkeeping,
        revise: @escaping @Sendable ([CacheEntryMetadata]) -> CacheRevision?
    ) async throws -> CacheRevisionResult {
        try await inTransaction("revising a cached response") { [self] connection in
            try await recordCacheActivity(connection, activity)
            let booked = try await record(connection, bookkeeping)
            let candidates = try await cacheCandidates(
                connection, resourceKey: resourceKey, validatedSinceMs: validatedSinceMs
            )
            guard !candidates.isEmpty, let revision = revise(candidates),
                  candidates.contains(where: { $0.id == revision.entryID })
            else { return CacheRevisionResult(entry: nil, bookkeeping: booked) }
            try await connection.run("""
                UPDATE cache_entries SET headers = \(StoredHeaders.encode(revision.headers)), etag = \(revision.etag),
                    last_modified = \(revision.lastModified), fresh_until_ms = \(revision.freshUntilMs),
                    validated_at_ms = \(revision.nowMs), last_access_ms = GREATEST(last_access_ms, \(revision.nowMs)),
                    hit_count = hit_count + \(Int64(revision.countsAsRevalidation ? 1 : 0)),
                    initial_age_ms = \(max(0, revision.initialAgeMs))
                WHERE id = \(revision.entryID)
                """, logger: logger)
            guard let metadata = try await cacheEntryMetadata(connection, id: revision.entryID),
                  let body = try await cacheBody(connection, entryID: revision.entryID)
            else { return CacheRevisionResult(entry: nil, bookkeeping: booked) }
            return CacheRevisionResult(entry: CacheEntry(metadata: metadata, body: body), bookkeeping: booked)
        }
    }

    /// Removes every variant of a resource.
    /// - Parameters:
    ///   - resourceKey: The resource's digest.
    ///   - activity: Buffered touches and statistics to apply first.
    /// - Returns: How many entries were removed.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func removeCacheEntries(resourceKey: String, activity: CacheActivity) async throws -> Int {
        try await inTransaction("removing cached responses") { [self] connection in
            try await recordCacheActivity(connection, activity)
            return try await connection.firstRow("""
                WITH removed AS (DELETE FROM cache_entries WHERE resource_key = \(resourceKey) RETURNING 1)
                SELECT count(*) FROM removed
                """, logger: logger)?.decode(Int.self) ?? 0
        }
    }

    /// Removes every entry stored for a URL, whatever its method, credential or variant.
    /// - Parameters:
    ///   - url: The redacted normalised URL.
    ///   - activity: Buffered touches and statistics to apply first.
    /// - Returns: How many entries were removed.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func invalidateCacheEntries(url: String, activity: CacheActivity) async throws -> Int {
        try await inTransaction("invalidating cached responses") { [self] connection in
            try await recordCacheActivity(connection, activity)
            return try await connection.firstRow("""
                WITH removed AS (DELETE FROM cache_entries WHERE url = \(url) RETURNING 1)
                SELECT count(*) FROM removed
                """, logger: logger)?.decode(Int.self) ?? 0
        }
    }

    /// Writes buffered touches and statistics.
    /// - Parameter activity: What to write.
    /// - Throws: ``PostgresStoreError`` when the server fails; nothing is written then.
    public func recordCacheActivity(_ activity: CacheActivity) async throws {
        guard !activity.isEmpty else { return }
        try await inTransaction("recording cache activity") { [self] connection in
            try await recordCacheActivity(connection, activity)
        }
    }

    /// Removes expired entries and evicts least recently used ones until the limits hold.
    /// - Parameters:
    ///   - retention: The limits.
    ///   - activity: Buffered touches and statistics to apply first.
    /// - Returns: What was removed.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func pruneCache(retention: CacheRetention, activity: CacheActivity) async throws -> CachePruneResult {
        try await inTransaction("pruning the cache") { [self] connection in
            try await recordCacheActivity(connection, activity)
            return try await enforceCacheRetention(connection, retention)
        }
    }

    /// Like ``pruneCache(retention:activity:)``, for an operator, with an `admin_events` row.
    /// - Parameters:
    ///   - retention: The limits.
    ///   - activity: Buffered touches and statistics to apply first.
    ///   - at: Not used: the database's clock stamps the event.
    /// - Returns: What was removed.
    /// - Throws: ``PostgresStoreError`` when the server fails; nothing is changed then.
    public func pruneCache(retention: CacheRetention, activity: CacheActivity, recordedAt at: Date) async throws
        -> CachePruneResult {
        try await inTransaction("pruning the cache") { [self] connection in
            try await recordCacheActivity(connection, activity)
            let result = try await enforceCacheRetention(connection, retention)
            let detail = "removed \(result.expired) expired and evicted \(result.evicted) "
                + "\(result.evicted == 1 ? "entry" : "entries") over the limits"
            try await connection.run("""
                INSERT INTO admin_events (at_ms, subject, target, action, detail)
                VALUES (tollgate_ms(now()), 'cache', NULL, 'prune', \(detail))
                """, logger: logger)
            return result
        }
    }

    /// Removes every stored response, or one endpoint's, with an `admin_events` row; statistics
    /// are kept.
    /// - Parameters:
    ///   - endpoint: One endpoint's entries, or nil for every entry.
    ///   - activity: Buffered touches and statistics to apply first.
    ///   - at: Not used: the database's clock stamps the event.
    /// - Returns: What was removed.
    /// - Throws: ``PostgresStoreError`` when the server fails; nothing is changed then.
    public func clearCache(endpoint: String?, activity: CacheActivity, at: Date) async throws -> CacheClearResult {
        try await inTransaction("clearing the cache") { [self] connection in
            try await recordCacheActivity(connection, activity)
            guard let row = try await connection.firstRow("""
                WITH removed AS (
                    DELETE FROM cache_entries WHERE \(endpoint)::text IS NULL OR endpoint = \(endpoint) RETURNING body_size
                )
                SELECT count(*), COALESCE(SUM(body_size), 0)::bigint FROM removed
                """, logger: logger) else { return CacheClearResult() }
            let (entries, bytes) = try row.decode((Int, Int64).self)
            let result = CacheClearResult(entries: entries, bodyBytes: bytes)
            let detail = "removed \(result.entries) \(result.entries == 1 ? "entry" : "entries") "
                + "(\(result.bodyBytes) body bytes)"
            try await connection.run("""
                INSERT INTO admin_events (at_ms, subject, target, action, detail)
                VALUES (tollgate_ms(now()), 'cache', \(endpoint), 'clear', \(detail))
                """, logger: logger)
            return result
        }
    }

    /// How many entries and body bytes the cache holds.
    /// - Returns: The totals.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func cacheTotals() async throws -> CacheTotals {
        try await withConnection("counting the cache") { [self] connection in try await cacheTotals(connection) }
    }

    /// Rows of the `cache_stats` view.
    /// - Parameter pacificDate: One Pacific date (`YYYY-MM-DD`), or nil for every day.
    /// - Returns: The rows, newest day first, then by endpoint.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func cacheStatistics(pacificDate: String?) async throws -> [CacheDailyStatistics] {
        try await withConnection("reading the cache statistics") { [self] connection in
            try await connection.rows("""
                SELECT pacific_date, endpoint, hits, revalidations, misses, stale, hit_rate::float8, bytes_saved, coalesced
                FROM cache_stats WHERE \(pacificDate)::text IS NULL OR pacific_date = \(pacificDate)
                """, logger: logger).map { row in
                let (date, endpoint, hits, revalidations, misses, stale, hitRate, bytesSaved, coalesced) = try row.decode(
                    (String, String, Int64, Int64, Int64, Int64, Double?, Int64, Int64).self
                )
                return CacheDailyStatistics(
                    pacificDate: date, endpoint: endpoint,
                    counts: CacheStatisticsCounts(
                        hits: hits, revalidations: revalidations, misses: misses, stale: stale, bytesSaved: bytesSaved,
                        coalesced: coalesced
                    ),
                    hitRate: hitRate
                )
            }
        }
    }

    /// Takes the coalescing lease on a resource unless another holder's lease is still running
    /// at `lease.startedMs`.
    /// - Parameters:
    ///   - resourceKey: The resource's cache key.
    ///   - lease: The lease to take.
    /// - Returns: The lease in force afterwards: `lease` when it was taken, else the running one.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func acquireCoalescingLease(resourceKey: String, lease: CoalescingLease) async throws -> CoalescingLease {
        try await withConnection("taking a coalescing lease") { [self] connection in
            // One statement: the upsert takes the lease when it is free or lapsed; otherwise the
            // running lease is read back under the row lock the conflict took.
            let taken = try await connection.firstRow("""
                INSERT INTO cache_leases AS l (resource_key, holder, started_ms, expires_ms)
                VALUES (\(resourceKey), \(lease.holder), \(lease.startedMs), \(lease.expiresMs))
                ON CONFLICT (resource_key) DO UPDATE SET
                    holder = excluded.holder, started_ms = excluded.started_ms, expires_ms = excluded.expires_ms
                WHERE l.expires_ms <= excluded.started_ms OR l.holder = excluded.holder
                RETURNING holder
                """, logger: logger)
            if taken != nil { return lease }
            return try await coalescingLease(connection, resourceKey: resourceKey) ?? lease
        }
    }

    /// The coalescing lease on a resource, running or lapsed, if any.
    /// - Parameter resourceKey: The resource's cache key.
    /// - Returns: The lease, or nil when nobody leads a fetch of it.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func coalescingLease(resourceKey: String) async throws -> CoalescingLease? {
        try await withConnection("reading a coalescing lease") { [self] connection in
            try await coalescingLease(connection, resourceKey: resourceKey)
        }
    }

    /// Gives a coalescing lease back, if `holder` still holds it.
    /// - Parameters:
    ///   - resourceKey: The resource's cache key.
    ///   - holder: The leading request's token.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func releaseCoalescingLease(resourceKey: String, holder: String) async throws {
        try await withConnection("giving a coalescing lease back") { [self] connection in
            _ = try await connection.run(
                "DELETE FROM cache_leases WHERE resource_key = \(resourceKey) AND holder = \(holder)", logger: logger
            )
        }
    }

    private func coalescingLease(_ connection: PostgresConnection, resourceKey: String) async throws -> CoalescingLease? {
        try await connection.firstRow(
            "SELECT holder, started_ms, expires_ms FROM cache_leases WHERE resource_key = \(resourceKey)", logger: logger
        ).map { row in
            let (holder, started, expires) = try row.decode((String, Int64, Int64).self)
            return CoalescingLease(holder: holder, startedMs: started, expiresMs: expires)
        }
    }
}
