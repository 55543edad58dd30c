import Foundation

/// The SQL of the cache's operations, one function per step, on a connection that is already in
/// a transaction, so the gate can compose them with other services' steps in one transaction.
///
/// Every statement a request's path runs goes through an index: `(resource_key, variant_key)` for
/// lookups, `cache_entries_lru` for eviction and for expiry after a write, `cache_entries_by_url`
/// for invalidation, and `cache_totals` (kept by triggers) for capacity. Only an operator's
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
        try db.fetchAll(selectCandidates, [.text(resourceKey), .integer(validatedSinceMs)]).map(metadata(from:))
    }

    /// One entry's body by id.
    static func body(_ db: Database, entryID: Int64) throws -> Data? {
        try db.fetchOne("SELECT body FROM cache_bodies WHERE entry_id = ?", [.integer(entryID)])?[0].data
    }

    /// Applies buffered touches and statistics.
    static func record(_ db: Database, activity: CacheActivity) throws {
        for (id, touch) in activity.touches {
            try db.execute(
                "UPDATE cache_entries SET last_access_ms = MAX(last_access_ms, ?), hit_count = hit_count + ? WHERE id = ?",
                [.integer(touch.lastAccessMs), .integer(touch.hits), .integer(id)]
            )
        }
        for (key, counts) in activity.statistics where !counts.isZero {
            try count(db, counts, for: key)
        }
    }

    /// Adds counts to one row of the daily statistics.
    static func count(_ db: Database, _ counts: CacheStatisticsCounts, for key: CacheStatisticsKey) throws {
        try db.execute(
            """
            INSERT INTO cache_stats_daily (pacific_date, endpoint, hits, revalidations, misses, stale, bytes_saved, coalesced)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (pacific_date, endpoint) DO UPDATE SET
                hits = hits + excluded.hits, revalidations = revalidations + excluded.revalidations,
                misses = misses + excluded.misses, stale = stale + excluded.stale,
                bytes_saved = bytes_saved + excluded.bytes_saved, coalesced = coalesced + excluded.coalesced
            """,
            [.text(key.pacificDate), .text(key.endpoint), .integer(counts.hits), .integer(counts.revalidations),
             .integer(counts.misses), .integer(counts.stale), .integer(counts.bytesSaved), .integer(counts.coalesced)]
        )
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
        try db.cachedStatement("SELECT id, variant_key, vary, hit_count FROM cache_entries WHERE resource_key = ?")
            .forEachRow([.text(entry.resourceKey)]) { row in
                if row[1].string == entry.variantKey, row[2].string == entry.vary, let id = row[0].int64 {
                    existing = (id, row[3].int64 ?? 0)
                } else if row[2].string != entry.vary {
                    otherVary = true
                }
            }
        if otherVary {
            try db.execute(
                "DELETE FROM cache_entries WHERE resource_key = ? AND vary IS NOT ?",
                [.text(entry.resourceKey), .optionalText(entry.vary)]
            )
        }
        let headers = DatabaseValue.text(StoredHeaders.encode(entry.headers))
        let size = Int64(entry.body.count)
        let id: Int64
        var evictedInPlace = 0
        if existing == nil, let retention, let victim = try victimToReplace(db, retention, adding: size) {
            try db.cachedStatement(
                """
                UPDATE cache_entries SET resource_key = ?, variant_key = ?, endpoint = ?, method = ?, url = ?, vary = ?,
                    status = ?, headers = ?, etag = ?, last_modified = ?, body_size = ?, stored_at_ms = ?,
                    validated_at_ms = ?, fresh_until_ms = ?, last_access_ms = ?, hit_count = 0, initial_age_ms = ?
                WHERE id = ?
                """
            ).execute([.text(entry.resourceKey), .text(entry.variantKey), .text(entry.endpoint), .text(entry.method),
                       .text(entry.url), .optionalText(entry.vary), .int(entry.status), headers,
                       .optionalText(entry.etag), .optionalText(entry.lastModified), .integer(size), .integer(entry.nowMs),
                       .integer(entry.nowMs), .optionalInt(entry.freshUntilMs), .integer(entry.nowMs),
                       .integer(max(0, entry.initialAgeMs)), .integer(victim)])
            try db.cachedStatement("UPDATE cache_bodies SET body = ? WHERE entry_id = ?")
                .execute([.blob(entry.body), .integer(victim)])
            id = victim
            evictedInPlace = 1
        } else if let existing {
            try db.execute(
                """
                UPDATE cache_entries SET endpoint = ?, method = ?, url = ?, status = ?, headers = ?,
                    etag = ?, last_modified = ?, body_size = ?, stored_at_ms = ?, validated_at_ms = ?,
                    fresh_until_ms = ?, last_access_ms = ?, initial_age_ms = ?
                WHERE id = ?
                """,
                [.text(entry.endpoint), .text(entry.method), .text(entry.url),
                 .int(entry.status), headers, .optionalText(entry.etag), .optionalText(entry.lastModified),
                 .integer(size), .integer(entry.nowMs), .integer(entry.nowMs), .optionalInt(entry.freshUntilMs),
                 .integer(entry.nowMs), .integer(max(0, entry.initialAgeMs)), .integer(existing.id)]
            )
            try db.execute("UPDATE cache_bodies SET body = ? WHERE entry_id = ?", [.blob(entry.body), .integer(existing.id)])
            id = existing.id
        } else {
            try db.execute(
                """
                INSERT INTO cache_entries (resource_key, variant_key, endpoint, method, url, vary, status, headers,
                    etag, last_modified, body_size, stored_at_ms, validated_at_ms, fresh_until_ms, last_access_ms,
                    initial_age_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [.text(entry.resourceKey), .text(entry.variantKey), .text(entry.endpoint), .text(entry.method),
                 .text(entry.url), .optionalText(entry.vary), .int(entry.status), headers,
                 .optionalText(entry.etag), .optionalText(entry.lastModified), .integer(size), .integer(entry.nowMs),
                 .integer(entry.nowMs), .optionalInt(entry.freshUntilMs), .integer(entry.nowMs),
                 .integer(max(0, entry.initialAgeMs))]
            )
            id = db.lastInsertedRowID
            try db.execute("INSERT INTO cache_bodies (entry_id, body) VALUES (?, ?)", [.integer(id), .blob(entry.body)])
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
            "SELECT id, body_size FROM cache_entries ORDER BY last_access_ms, id LIMIT 1"
        ).fetchOne(), let id = victim[0].int64 else { return nil }
        let bodyBytes = current.bodyBytes - (victim[1].int64 ?? 0) + size
        return bodyBytes <= retention.maxTotalBodyBytes ? id : nil
    }

    /// Applies a `304`'s revision: metadata only, never the body.
    /// - Returns: The entry's metadata as revised, or nil when no entry has the revision's id.
    static func revise(_ db: Database, _ revision: CacheRevision) throws -> CacheEntryMetadata? {
        // RETURNING: the revised row comes back from the UPDATE, not from a second look-up by id.
        try db.fetchOne(reviseReturningMetadata, [
            .text(StoredHeaders.encode(revision.headers)), .optionalText(revision.etag), .optionalText(revision.lastModified),
            .optionalInt(revision.freshUntilMs), .integer(revision.nowMs), .integer(revision.nowMs),
            .integer(revision.countsAsRevalidation ? 1 : 0), .integer(max(0, revision.initialAgeMs)),
            .integer(revision.entryID),
        ]).map(metadata(from:))
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
        try db.execute("DELETE FROM cache_entries WHERE resource_key = ?", [.text(resourceKey)])
        return db.changesCount
    }

    /// Removes every entry stored for a URL.
    static func invalidate(_ db: Database, url: String) throws -> Int {
        try db.execute("DELETE FROM cache_entries WHERE url = ?", [.text(url)])
        return db.changesCount
    }

    /// Removes every entry, or one endpoint's. An operator's action, not a hot path: one
    /// endpoint's entries are found by scanning the table (no index on `endpoint`).
    static func clear(_ db: Database, endpoint: String?) throws -> CacheClearResult {
        var result = CacheClearResult()
        let rows = if let endpoint {
            try db.fetchAll("DELETE FROM cache_entries WHERE endpoint = ? RETURNING body_size", [.text(endpoint)])
        } else {
            try db.fetchAll("DELETE FROM cache_entries RETURNING body_size")
        }
        for row in rows {
            result.entries += 1
            result.bodyBytes += row[0].int64 ?? 0
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
            try db.cachedStatement("DELETE FROM cache_entries WHERE last_access_ms < ? AND validated_at_ms < ?")
                .execute([cutoff, cutoff])
        case .all:
            try db.execute("DELETE FROM cache_entries WHERE validated_at_ms < ?", [cutoff])
        }
        result.expired = db.changesCount

        var current = try totals(db)
        let excess = current.entries - max(retention.maxEntries, 0)
        if excess > 0 {
            try db.cachedStatement(
                """
                DELETE FROM cache_entries WHERE id IN (
                    SELECT id FROM cache_entries WHERE id IS NOT ? ORDER BY last_access_ms, id LIMIT ?)
                RETURNING body_size
                """
            ).forEachRow([.optionalInt(keeping), .int(excess)]) { row in
                result.evicted += 1
                current.bodyBytes -= row[0].int64 ?? 0
            }
        }
        while current.bodyBytes > retention.maxTotalBodyBytes {
            guard let freed = try db.fetchOne(
                """
                DELETE FROM cache_entries WHERE id = (
                    SELECT id FROM cache_entries WHERE id IS NOT ? ORDER BY last_access_ms, id LIMIT 1)
                RETURNING body_size
                """,
                [.optionalInt(keeping)]
            ) else { break }
            result.evicted += 1
            current.bodyBytes -= freed[0].int64 ?? 0
        }
        return result
    }

    /// The totals the triggers keep.
    static func totals(_ db: Database) throws -> CacheTotals {
        let row = try db.fetchOne("SELECT entries, body_bytes FROM cache_totals WHERE id = 1")
        return CacheTotals(entries: row?[0].int ?? 0, bodyBytes: row?[1].int64 ?? 0)
    }

    /// Rows of the `cache_stats` view.
    static func statistics(_ db: Database, pacificDate: String?) throws -> [CacheDailyStatistics] {
        let rows = if let pacificDate {
            try db.fetchAll(
                "SELECT pacific_date, endpoint, hits, revalidations, misses, stale, hit_rate, bytes_saved, coalesced "
                    + "FROM cache_stats WHERE pacific_date = ?",
                [.text(pacificDate)]
            )
        } else {
            try db.fetchAll(
                "SELECT pacific_date, endpoint, hits, revalidations, misses, stale, hit_rate, bytes_saved, coalesced "
                    + "FROM cache_stats"
            )
        }
        return rows.map { row in
            CacheDailyStatistics(
                pacificDate: row[0].string ?? "", endpoint: row[1].string ?? "",
                counts: CacheStatisticsCounts(
                    hits: row[2].int64 ?? 0, revalidations: row[3].int64 ?? 0, misses: row[4].int64 ?? 0,
                    stale: row[5].int64 ?? 0, bytesSaved: row[7].int64 ?? 0, coalesced: row[8].int64 ?? 0
                ),
                hitRate: row[6].double
            )
        }
    }

    // MARK: Rows

    private static func metadata(from row: Row) -> CacheEntryMetadata {
        CacheEntryMetadata(
            id: row[0].int64 ?? 0, resourceKey: row[1].string ?? "", variantKey: row[2].string ?? "",
            endpoint: row[3].string ?? "", method: row[4].string ?? "", url: row[5].string ?? "",
            vary: row[6].string, status: row[7].int ?? 0, headers: StoredHeaders.decode(row[8].string ?? ""),
            etag: row[9].string, lastModified: row[10].string, bodySize: row[11].int64 ?? 0,
            storedAtMs: row[12].int64 ?? 0, validatedAtMs: row[13].int64 ?? 0, freshUntilMs: row[14].int64,
            lastAccessMs: row[15].int64 ?? 0, hitCount: row[16].int64 ?? 0, initialAgeMs: row[17].int64 ?? 0
        )
    }
}
