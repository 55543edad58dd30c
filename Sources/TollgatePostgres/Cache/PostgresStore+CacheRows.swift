import Foundation
import Logging
import PostgresNIO
import TollgateCore

/// The cache's statements, on a connection inside a transaction the caller opened.
///
/// Unlike SQLite's schema, PostgreSQL's keeps no `cache_totals` row: one row that every cache
/// write of every machine updates would order all of them behind its lock. Totals are counted
/// instead; the cache holds at most its entry limit (1,000 by default), so the count is cheap.
extension PostgresStore {
    static let cacheMetadataColumns = """
        id, resource_key, variant_key, endpoint, method, url, vary, status, headers, etag, last_modified, \
        body_size, stored_at_ms, validated_at_ms, fresh_until_ms, last_access_ms, hit_count, initial_age_ms
        """

    /// The live variants of a resource.
    func cacheCandidates(
        _ connection: PostgresConnection, resourceKey: String, validatedSinceMs: Int64
    ) async throws -> [CacheEntryMetadata] {
        try await connection.rows("""
            SELECT \(unescaped: Self.cacheMetadataColumns) FROM cache_entries
            WHERE resource_key = \(resourceKey) AND validated_at_ms >= \(validatedSinceMs)
            ORDER BY id
            """, logger: logger).map(Self.cacheMetadata)
    }

    /// One entry's metadata by id.
    func cacheEntryMetadata(_ connection: PostgresConnection, id: Int64) async throws -> CacheEntryMetadata? {
        try await connection.firstRow(
            "SELECT \(unescaped: Self.cacheMetadataColumns) FROM cache_entries WHERE id = \(id)", logger: logger
        ).map(Self.cacheMetadata)
    }

    /// One entry's body by id.
    func cacheBody(_ connection: PostgresConnection, entryID: Int64) async throws -> Data? {
        try await connection.firstRow(
            "SELECT body FROM cache_bodies WHERE entry_id = \(entryID)", logger: logger
        )?.decode(Data.self)
    }

    /// Applies buffered touches and statistics. Touches are applied in id order, so two machines
    /// flushing overlapping touches lock the rows in the same order.
    func recordCacheActivity(_ connection: PostgresConnection, _ activity: CacheActivity) async throws {
        if !activity.touches.isEmpty {
            let touches = activity.touches.sorted { $0.key < $1.key }
            try await connection.run("""
                UPDATE cache_entries AS entry
                SET last_access_ms = GREATEST(entry.last_access_ms, touch.at_ms), hit_count = entry.hit_count + touch.hits
                FROM unnest(\(touches.map(\.key))::bigint[], \(touches.map(\.value.lastAccessMs))::bigint[],
                            \(touches.map(\.value.hits))::bigint[]) AS touch (id, at_ms, hits)
                WHERE entry.id = touch.id
                """, logger: logger)
        }
        let statistics = activity.statistics
            .filter { !$0.value.isZero }
            .sorted { ($0.key.pacificDate, $0.key.endpoint) < ($1.key.pacificDate, $1.key.endpoint) }
        for (key, counts) in statistics {
            try await countCacheStatistics(connection, counts, for: key)
        }
    }

    /// Adds counts to one row of the daily statistics.
    func countCacheStatistics(
        _ connection: PostgresConnection, _ counts: CacheStatisticsCounts, for key: CacheStatisticsKey
    ) async throws {
        try await connection.run("""
            INSERT INTO cache_stats_daily AS s (pacific_date, endpoint, hits, revalidations, misses, stale, bytes_saved,
                                                coalesced)
            VALUES (\(key.pacificDate), \(key.endpoint), \(counts.hits), \(counts.revalidations), \(counts.misses),
                    \(counts.stale), \(counts.bytesSaved), \(counts.coalesced))
            ON CONFLICT (pacific_date, endpoint) DO UPDATE SET
                hits = s.hits + excluded.hits, revalidations = s.revalidations + excluded.revalidations,
                misses = s.misses + excluded.misses, stale = s.stale + excluded.stale,
                bytes_saved = s.bytes_saved + excluded.bytes_saved, coalesced = s.coalesced + excluded.coalesced
            """, logger: logger)
    }

    /// Inserts or replaces an entry and its body in one upsert on `(resource_key, variant_key)`,
    /// so two machines storing the same response at once never collide. An entry stored later than
    /// `entry.nowMs` (another machine's newer answer) is kept, never overwritten by this older one.
    /// - Returns: The entry in force afterwards, whether it replaced an entry with the same keys,
    ///   and whether this call wrote it.
    func upsertCacheEntry(
        _ connection: PostgresConnection, _ entry: NewCacheEntry
    ) async throws -> (metadata: CacheEntryMetadata, replaced: Bool, written: Bool) {
        // A variant stored under another Vary would match requests this response no longer describes.
        try await connection.run("""
            DELETE FROM cache_entries WHERE resource_key = \(entry.resourceKey) AND vary IS DISTINCT FROM \(entry.vary)
            """, logger: logger)
        let headers = StoredHeaders.encode(entry.headers)
        let size = Int64(entry.body.count)
        let initialAge = max(0, entry.initialAgeMs)
        guard let row = try await connection.firstRow("""
            INSERT INTO cache_entries AS c (resource_key, variant_key, endpoint, method, url, vary, status, headers,
                etag, last_modified, body_size, stored_at_ms, validated_at_ms, fresh_until_ms, last_access_ms,
                initial_age_ms)
            VALUES (\(entry.resourceKey), \(entry.variantKey), \(entry.endpoint), \(entry.method), \(entry.url),
                    \(entry.vary), \(entry.status), \(headers), \(entry.etag), \(entry.lastModified), \(size),
                    \(entry.nowMs), \(entry.nowMs), \(entry.freshUntilMs), \(entry.nowMs), \(initialAge))
            ON CONFLICT (resource_key, variant_key) DO UPDATE SET
                endpoint = excluded.endpoint, method = excluded.method, url = excluded.url, vary = excluded.vary,
                status = excluded.status, headers = excluded.headers, etag = excluded.etag,
                last_modified = excluded.last_modified, body_size = excluded.body_size,
                stored_at_ms = excluded.stored_at_ms, validated_at_ms = excluded.validated_at_ms,
                fresh_until_ms = excluded.fresh_until_ms, last_access_ms = excluded.last_access_ms,
                initial_age_ms = excluded.initial_age_ms
            WHERE c.stored_at_ms <= excluded.stored_at_ms
            RETURNING c.id, c.hit_count, (c.xmax = 0) AS inserted
            """, logger: logger) else {
            // The stored entry is newer than this response: it stays, and it is what is in force.
            guard let kept = try await connection.firstRow("""
                SELECT \(unescaped: Self.cacheMetadataColumns) FROM cache_entries
                WHERE resource_key = \(entry.resourceKey) AND variant_key = \(entry.variantKey)
                """, logger: logger).map(Self.cacheMetadata) else {
                throw StoreRefusal.invalidArgument("the cache entry of \(entry.url) vanished while it was stored")
            }
            return (kept, false, false)
        }
        let (id, hitCount, inserted) = try row.decode((Int64, Int64, Bool).self)
        try await connection.run("""
            INSERT INTO cache_bodies (entry_id, body) VALUES (\(id), \(entry.body))
            ON CONFLICT (entry_id) DO UPDATE SET body = excluded.body
            """, logger: logger)
        let metadata = CacheEntryMetadata(
            id: id, resourceKey: entry.resourceKey, variantKey: entry.variantKey, endpoint: entry.endpoint,
            method: entry.method, url: entry.url, vary: entry.vary, status: entry.status, headers: entry.headers,
            etag: entry.etag, lastModified: entry.lastModified, bodySize: size, storedAtMs: entry.nowMs,
            validatedAtMs: entry.nowMs, freshUntilMs: entry.freshUntilMs, lastAccessMs: entry.nowMs,
            hitCount: hitCount, initialAgeMs: initialAge
        )
        return (metadata, !inserted, true)
    }

    /// Removes expired entries, then evicts least recently used ones (never `keeping`) until the
    /// entry and byte limits hold.
    func enforceCacheRetention(
        _ connection: PostgresConnection, _ retention: CacheRetention, keeping: Int64? = nil
    ) async throws -> CachePruneResult {
        var result = CachePruneResult()
        result.expired = try await connection.firstRow("""
            WITH removed AS (DELETE FROM cache_entries WHERE validated_at_ms < \(retention.expiredBeforeMs) RETURNING 1)
            SELECT count(*) FROM removed
            """, logger: logger)?.decode(Int.self) ?? 0
        var current = try await cacheTotals(connection)
        let excess = current.entries - max(retention.maxEntries, 0)
        if excess > 0 {
            for row in try await connection.rows("""
                DELETE FROM cache_entries WHERE id IN (
                    SELECT id FROM cache_entries WHERE id IS DISTINCT FROM \(keeping)
                    ORDER BY last_access_ms, id LIMIT \(excess))
                RETURNING body_size
                """, logger: logger) {
                result.evicted += 1
                current.bodyBytes -= try row.decode(Int64.self)
            }
        }
        let excessBytes = current.bodyBytes - retention.maxTotalBodyBytes
        if excessBytes > 0 {
            // Least recently used first, until what they free covers the excess: the entries whose
            // running total, before them, is still short of it.
            for _ in try await connection.rows("""
                WITH ordered AS (
                    SELECT id, body_size, SUM(body_size) OVER (ORDER BY last_access_ms, id) AS running
                    FROM cache_entries WHERE id IS DISTINCT FROM \(keeping)
                )
                DELETE FROM cache_entries WHERE id IN (SELECT id FROM ordered WHERE running - body_size < \(excessBytes))
                RETURNING id
                """, logger: logger) {
                result.evicted += 1
            }
        }
        return result
    }

    /// How many entries and body bytes the cache holds, counted.
    func cacheTotals(_ connection: PostgresConnection) async throws -> CacheTotals {
        guard let row = try await connection.firstRow(
            "SELECT count(*), COALESCE(SUM(body_size), 0)::bigint FROM cache_entries", logger: logger
        ) else { return CacheTotals(entries: 0, bodyBytes: 0) }
        let (entries, bytes) = try row.decode((Int, Int64).self)
        return CacheTotals(entries: entries, bodyBytes: bytes)
    }

    static func cacheMetadata(_ row: PostgresRow) throws -> CacheEntryMetadata {
        let row = row.makeRandomAccess()
        return CacheEntryMetadata(
            id: try row["id"].decode(Int64.self), resourceKey: try row["resource_key"].decode(String.self),
            variantKey: try row["variant_key"].decode(String.self), endpoint: try row["endpoint"].decode(String.self),
            method: try row["method"].decode(String.self), url: try row["url"].decode(String.self),
            vary: try row["vary"].decode(String?.self), status: try row["status"].decode(Int.self),
            headers: StoredHeaders.decode(try row["headers"].decode(String.self)),
            etag: try row["etag"].decode(String?.self), lastModified: try row["last_modified"].decode(String?.self),
            bodySize: try row["body_size"].decode(Int64.self), storedAtMs: try row["stored_at_ms"].decode(Int64.self),
            validatedAtMs: try row["validated_at_ms"].decode(Int64.self),
            freshUntilMs: try row["fresh_until_ms"].decode(Int64?.self),
            lastAccessMs: try row["last_access_ms"].decode(Int64.self), hitCount: try row["hit_count"].decode(Int64.self),
            initialAgeMs: try row["initial_age_ms"].decode(Int64.self)
        )
    }
}
