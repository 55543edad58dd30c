import Foundation
import TollgateCore

/// The SQL of the cache's operations, one function per step, on a connection that is already in
/// a transaction, so the gate can compose them with other services' steps in one transaction.
///
/// Every statement a request's path runs goes through an index: `(resource_key, variant_key)` for
/// lookups and, since a key begins with its URL (`CacheResourceKey`), for invalidation by URL
/// (with `cache_entries_by_url_unkeyed` for keys made another way); `cache_entries_lru` for
/// eviction and for expiry after a write; and `cache_totals` (kept by triggers) for capacity. Only an operator's
/// actions scan the table: a prune checking every entry's age, a clear of one endpoint.
enum CacheTable {
    private static let metadataColumns = """
        id, resource_key, variant_key, endpoint, method, url, vary, status, headers, etag, last_modified,
        body_size, stored_at_ms, validated_at_ms, fresh_until_ms, last_access_ms, hit_count, initial_age_ms
        """
    // Interpolated once: a text built per call is hashed and compared in full by the statement cache.
    private static let selectCandidates =
        "SELECT \(metadataColumns) FROM cache_entries WHERE resource_key = ? AND validated_at_ms >= ?"

    /// The live variants of a resource.
    static func candidates(_ db: Database, resourceKey: String, validatedSinceMs: Int64) throws -> [CacheEntryMetadata] {
        try CacheEntryMetadata.fetchAll(db.cachedStatement(sql: selectCandidates), arguments: [resourceKey, validatedSinceMs])
    }

    /// One entry's body by id.
    static func body(_ db: Database, entryID: Int64) throws -> Data? {
        try db.cachedStatement(sql: "SELECT body FROM cache_bodies WHERE entry_id = ?").fetchOne(arguments: [entryID])?
            .decode(Data.self, forColumn: "body")
    }

    /// Applies buffered touches and statistics.
    static func record(_ db: Database, activity: CacheActivity) throws {
        for (id, touch) in activity.touches {
            try db.cachedStatement(sql: "UPDATE cache_entries SET last_access_ms = MAX(last_access_ms, ?), hit_count = hit_count + ? WHERE id = ?").execute(arguments: [touch.lastAccessMs, touch.hits, id])
        }
        for (key, counts) in activity.statistics where !counts.isZero {
            try count(db, counts, for: key)
        }
    }

    /// Adds counts to one row of the daily statistics.
    static func count(_ db: Database, _ counts: CacheStatisticsCounts, for key: CacheStatisticsKey) throws {
        try db.cachedStatement(sql: """
            INSERT INTO cache_stats_daily (pacific_date, endpoint, hits, revalidations, misses, stale, bytes_saved, coalesced)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (pacific_date, endpoint) DO UPDATE SET
                hits = hits + excluded.hits, revalidations = revalidations + excluded.revalidations,
                misses = misses + excluded.misses, stale = stale + excluded.stale,
                bytes_saved = bytes_saved + excluded.bytes_saved, coalesced = coalesced + excluded.coalesced
            """).execute(arguments: [key.pacificDate, key.endpoint, counts.hits, counts.revalidations,
             counts.misses, counts.stale, counts.bytesSaved, counts.coalesced])
    }

    /// Inserts or replaces an entry and its body; returns the stored metadata and whether it
    /// replaced an entry with the same keys.
    /// At capacity (`retention`'s entry limit reached), a new resource takes over the least recently
    /// used entry's rows in place — the same id, table row and body row rewritten — instead of a
    /// row inserted and another deleted: fewer pages, no freelist churn. `evictedInPlace` is 1 then.
    static func upsert(
        _ db: Database, _ entry: NewCacheEntry, retention: CacheRetention? = nil
    ) throws -> (metadata: CacheEntryMetadata, replaced: Bool, evictedInPlace: Int) {
        // One probe of the unique index finds the same variant and any variant stored under another
        // Vary, which would match requests this response no longer describes.
        var existing: (id: Int64, hitCount: Int64)?
        var otherVary = false
        try db.cachedStatement(sql: "SELECT id, variant_key, vary, hit_count FROM cache_entries WHERE resource_key = ?")
            .forEachRow(arguments: [entry.resourceKey]) { row in
                let vary = try row.decode(String?.self, forColumn: "vary")
                if try row.decode(String.self, forColumn: "variant_key") == entry.variantKey, vary == entry.vary {
                    existing = (try row.decode(Int64.self, forColumn: "id"), try row.decode(Int64.self, forColumn: "hit_count"))
                } else if vary != entry.vary {
                    otherVary = true
                }
            }
        if otherVary {
            try db.cachedStatement(sql: "DELETE FROM cache_entries WHERE resource_key = ? AND vary IS NOT ?").execute(arguments: [entry.resourceKey, entry.vary])
        }
        let headers = DatabaseValue.text(StoredHeaders.encode(entry.headers))
        let size = Int64(entry.body.count)
        let id: Int64
        var evictedInPlace = 0
        if existing == nil, let retention, let victim = try victimToReplace(db, retention, adding: size) {
            try db.cachedStatement(
                sql: """
                UPDATE cache_entries SET resource_key = ?, variant_key = ?, endpoint = ?, method = ?, url = ?, vary = ?,
                    status = ?, headers = ?, etag = ?, last_modified = ?, body_size = ?, stored_at_ms = ?,
                    validated_at_ms = ?, fresh_until_ms = ?, last_access_ms = ?, hit_count = 0, initial_age_ms = ?
                WHERE id = ?
                """
            ).execute(arguments: [entry.resourceKey, entry.variantKey, entry.endpoint, entry.method,
                       entry.url, entry.vary, entry.status, headers,
                       entry.etag, entry.lastModified, size, entry.nowMs,
                       entry.nowMs, entry.freshUntilMs, entry.nowMs,
                       max(0, entry.initialAgeMs), victim])
            try db.cachedStatement(sql: "UPDATE cache_bodies SET body = ? WHERE entry_id = ?")
                .execute(arguments: [entry.body, victim])
            id = victim
            evictedInPlace = 1
        } else if let existing {
            try db.cachedStatement(sql: """
                UPDATE cache_entries SET endpoint = ?, method = ?, url = ?, status = ?, headers = ?,
                    etag = ?, last_modified = ?, body_size = ?, stored_at_ms = ?, validated_at_ms = ?,
                    fresh_until_ms = ?, last_access_ms = ?, initial_age_ms = ?
                WHERE id = ?
                """).execute(arguments: [entry.endpoint, entry.method, entry.url,
                 entry.status, headers, entry.etag, entry.lastModified,
                 size, entry.nowMs, entry.nowMs, entry.freshUntilMs,
                 entry.nowMs, max(0, entry.initialAgeMs), existing.id])
            try db.cachedStatement(sql: "UPDATE cache_bodies SET body = ? WHERE entry_id = ?").execute(arguments: [entry.body, existing.id])
            id = existing.id
        } else {
            try db.cachedStatement(sql: """
                INSERT INTO cache_entries (resource_key, variant_key, endpoint, method, url, vary, status, headers,
                    etag, last_modified, body_size, stored_at_ms, validated_at_ms, fresh_until_ms, last_access_ms,
                    initial_age_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [entry.resourceKey, entry.variantKey, entry.endpoint, entry.method,
                 entry.url, entry.vary, entry.status, headers,
                 entry.etag, entry.lastModified, size, entry.nowMs,
                 entry.nowMs, entry.freshUntilMs, entry.nowMs,
                 max(0, entry.initialAgeMs)])
            id = db.lastInsertedRowID
            try db.cachedStatement(sql: "INSERT INTO cache_bodies (entry_id, body) VALUES (?, ?)").execute(arguments: [id, entry.body])
        }
        let metadata = CacheEntryMetadata(
            id: id, resourceKey: entry.resourceKey, variantKey: entry.variantKey, endpoint: entry.endpoint,
            method: entry.method, url: entry.url, vary: entry.vary, status: entry.status, headers: entry.headers,
            etag: entry.etag, lastModified: entry.lastModified, bodySize: size, storedAtMs: entry.nowMs,
            validatedAtMs: entry.nowMs, freshUntilMs: entry.freshUntilMs, lastAccessMs: entry.nowMs,
            hitCount: existing?.hitCount ?? 0, initialAgeMs: max(0, entry.initialAgeMs)
        )
        return (metadata, existing != nil, evictedInPlace)
    }

    /// The entry a new one replaces in place: the least recently used, when the cache is at its
    /// entry limit and the bytes stay within budget once the victim's body is swapped for the new one.
    private static func victimToReplace(_ db: Database, _ retention: CacheRetention, adding size: Int64) throws -> Int64? {
        let current = try totals(db)
        guard retention.maxEntries > 0, current.entries >= retention.maxEntries else { return nil }
        guard let victim = try db.cachedStatement(
            sql: "SELECT id, body_size FROM cache_entries ORDER BY last_access_ms, id LIMIT 1"
        ).fetchOne() else { return nil }
        let id = try victim.decode(Int64.self, forColumn: "id")
        let bodyBytes = current.bodyBytes - (try victim.decode(Int64.self, forColumn: "body_size")) + size
        return bodyBytes <= retention.maxTotalBodyBytes ? id : nil
    }

    /// Applies a `304`'s revision: metadata only, never the body.
    /// - Returns: The entry's metadata as revised, or nil when no entry has the revision's id.
    static func revise(_ db: Database, _ revision: CacheRevision) throws -> CacheEntryMetadata? {
        // RETURNING: the revised row comes back from the UPDATE, not from a second look-up by id.
        try db.cachedStatement(sql: reviseReturningMetadata).fetchOne(arguments: [
            StoredHeaders.encode(revision.headers), revision.etag, revision.lastModified,
            revision.freshUntilMs, revision.nowMs, revision.nowMs,
            revision.countsAsRevalidation ? 1 : 0, max(0, revision.initialAgeMs),
            revision.entryID,
        ]).map(CacheEntryMetadata.init(row:))
    }

    private static let reviseReturningMetadata = """
        UPDATE cache_entries SET headers = ?, etag = ?, last_modified = ?, fresh_until_ms = ?,
            validated_at_ms = ?, last_access_ms = MAX(last_access_ms, ?), hit_count = hit_count + ?,
            initial_age_ms = ?
        WHERE id = ?
        RETURNING \(metadataColumns)
        """

    /// Removes every variant of a resource.
    static func remove(_ db: Database, resourceKey: String) throws -> Int {
        try db.cachedStatement(sql: "DELETE FROM cache_entries WHERE resource_key = ?").execute(arguments: [resourceKey])
        return db.changesCount
    }

    /// Removes every entry stored for a URL: the range of keys that begin with it, in the keys'
    /// unique index, and any key made another way, through the index that holds only those
    /// (schema version 8; `CacheStorageTests.queryPlansUseIndexes` holds the plan to both).
    static func invalidate(_ db: Database, url: String) throws -> Int {
        let keys = CacheResourceKey.range(forURL: url)
        try db.cachedStatement(sql: invalidateByURL).execute(keys.lower, keys.upper, url)
        return db.changesCount
    }

    /// The second clause is the partial index's own condition, so that SQLite can use it.
    static let invalidateByURL = """
        DELETE FROM cache_entries
        WHERE (resource_key >= ?1 AND resource_key < ?2 AND url = ?3)
           OR (url = ?3 AND substr(resource_key, 1, length(url) + 1) <> url || char(10))
        """

    /// Removes every entry, or one endpoint's. An operator's action, not a hot path: one
    /// endpoint's entries are found by scanning the table (no index on `endpoint`).
    static func clear(_ db: Database, endpoint: String?) throws -> CacheClearResult {
        var result = CacheClearResult()
        let rows = if let endpoint {
            try db.cachedStatement(sql: "DELETE FROM cache_entries WHERE endpoint = ? RETURNING body_size").fetchAll(arguments: [endpoint])
        } else {
            try db.cachedStatement(sql: "DELETE FROM cache_entries RETURNING body_size").fetchAll()
        }
        for row in rows {
            result.entries += 1
            result.bodyBytes += try row.decode(Int64.self, forColumn: "body_size")
        }
        return result
    }

    /// Which expired entries ``enforce(_:_:keeping:expiring:)`` removes.
    enum Expiry {
        /// Those last used before the cutoff, found through the LRU index: what a cache write
        /// removes on its way (schema version 5). Expired entries used after the cutoff stay until
        /// their last use is older than it; the lookup never serves them.
        case lastUsedBeforeCutoff
        /// Every expired entry, checking each: an operator's prune.
        case all
    }

    /// Removes expired entries, then evicts least recently used ones (never `keeping`) until the
    /// entry and byte limits hold.
    static func enforce(
        _ db: Database, _ retention: CacheRetention, keeping: Int64? = nil, expiring expiry: Expiry = .lastUsedBeforeCutoff
    ) throws -> CachePruneResult {
        var result = CachePruneResult()
        let cutoff = DatabaseValue.integer(retention.expiredBeforeMs)
        switch expiry {
        case .lastUsedBeforeCutoff:
            try db.cachedStatement(sql: "DELETE FROM cache_entries WHERE last_access_ms < ? AND validated_at_ms < ?")
                .execute(arguments: [cutoff, cutoff])
        case .all:
            try db.cachedStatement(sql: "DELETE FROM cache_entries WHERE validated_at_ms < ?").execute(arguments: [cutoff])
        }
        result.expired = db.changesCount

        var current = try totals(db)
        let excess = current.entries - max(retention.maxEntries, 0)
        if excess > 0 {
            try db.cachedStatement(
                sql: """
                DELETE FROM cache_entries WHERE id IN (
                    SELECT id FROM cache_entries WHERE id IS NOT ? ORDER BY last_access_ms, id LIMIT ?)
                RETURNING body_size
                """
            ).forEachRow(arguments: [keeping, excess]) { row in
                result.evicted += 1
                current.bodyBytes -= try row.decode(Int64.self, forColumn: "body_size")
            }
        }
        while current.bodyBytes > retention.maxTotalBodyBytes {
            guard let freed = try db.cachedStatement(sql: """
                DELETE FROM cache_entries WHERE id = (
                    SELECT id FROM cache_entries WHERE id IS NOT ? ORDER BY last_access_ms, id LIMIT 1)
                RETURNING body_size
                """).fetchOne(arguments: [keeping]) else { break }
            result.evicted += 1
            current.bodyBytes -= try freed.decode(Int64.self, forColumn: "body_size")
        }
        return result
    }

    /// The totals the triggers keep.
    static func totals(_ db: Database) throws -> CacheTotals {
        // The migrations insert the one row; its absence would be a file edited by hand.
        guard let row = try db.cachedStatement(sql: "SELECT entries, body_bytes FROM cache_totals WHERE id = 1").fetchOne() else {
            return CacheTotals(entries: 0, bodyBytes: 0)
        }
        return CacheTotals(entries: try row.decode(Int.self, forColumn: "entries"),
                           bodyBytes: try row.decode(Int64.self, forColumn: "body_bytes"))
    }

    /// Rows of the `cache_stats` view.
    static func statistics(_ db: Database, pacificDate: String?) throws -> [CacheDailyStatistics] {
        let rows = if let pacificDate {
            try db.cachedStatement(sql: "SELECT pacific_date, endpoint, hits, revalidations, misses, stale, hit_rate, bytes_saved, coalesced "
                    + "FROM cache_stats WHERE pacific_date = ?").fetchAll(arguments: [pacificDate])
        } else {
            try db.cachedStatement(sql: "SELECT pacific_date, endpoint, hits, revalidations, misses, stale, hit_rate, bytes_saved, coalesced "
                    + "FROM cache_stats").fetchAll()
        }
        return try rows.map(CacheDailyStatistics.init(row:))
    }
}
