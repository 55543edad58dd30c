import Foundation
import TollgateCore

extension SQLiteStore: CacheStorage {
    public func cachedEntry(
        resourceKey: String, validatedSinceMs: Int64,
        selectVariant: @escaping @Sendable ([CacheEntryMetadata]) -> Int64?
    ) async throws -> CacheEntry? {
        // A hit on an entry read recently costs one look at the data version and no row.
        var generation: UInt64?
        if let version = dataVersionIfFree() {
            let (lookup, current) = recentCacheEntries.withLock { recent in
                recent.observe(dataVersion: version)
                return (recent.lookup(resourceKey: resourceKey, validatedSinceMs: validatedSinceMs,
                                      selectVariant: selectVariant), recent.generation)
            }
            if case .known(let entry) = lookup { return entry }
            generation = current
        }
        let (entry, resource) = try await read { db -> (CacheEntry?, RecentCacheEntries.Resource) in
            let candidates = try CacheTable.candidates(db, resourceKey: resourceKey, validatedSinceMs: validatedSinceMs)
            var resource = RecentCacheEntries.Resource(candidates: candidates, validatedSinceMs: validatedSinceMs, bodies: [:])
            guard !candidates.isEmpty, let id = selectVariant(candidates),
                  let metadata = candidates.first(where: { $0.id == id }),
                  let body = try CacheTable.body(db, entryID: id)
            else { return (nil, resource) }
            resource.bodies[id] = body
            return (CacheEntry(metadata: metadata, body: body), resource)
        }
        if let generation {
            recentCacheEntries.withLock { $0.remember(resource, resourceKey: resourceKey, readAt: generation) }
        }
        return entry
    }

    /// Forgets the recent entries of the resource a write changed, once it is over (committed or not).
    private func forgettingRecent<T>(_ resourceKey: String, _ body: () async throws -> T) async rethrows -> T {
        defer { recentCacheEntries.withLock { $0.forget(resourceKey: resourceKey) } }
        return try await body()
    }

    /// Forgets every recent entry once a write whose changed rows are not known one by one is over.
    private func forgettingAllRecent<T>(_ body: () async throws -> T) async rethrows -> T {
        defer { recentCacheEntries.withLock { $0.forgetAll() } }
        return try await body()
    }

    public func storeCacheEntry(
        _ entry: NewCacheEntry, retention: CacheRetention, activity: CacheActivity, bookkeeping: AnswerBookkeeping
    ) async throws -> CacheStoreResult {
        let result = try await forgettingRecent(entry.resourceKey) {
            try await writeKeepingRecentEntries { db in
                try CacheTable.record(db, activity: activity)
                let (metadata, replaced, evictedInPlace) = try CacheTable.upsert(db, entry, retention: retention)
                var pruned = try CacheTable.enforce(db, retention, keeping: metadata.id)
                pruned.evicted += evictedInPlace
                let booked = try AdmissionTable.record(db, bookkeeping)
                return CacheStoreResult(entry: metadata, replaced: replaced, pruned: pruned, bookkeeping: booked)
            }
        }
        // At capacity a store evicts other resources' rows, which memory must not serve after.
        if result.pruned.evicted > 0 { recentCacheEntries.withLock { $0.forgetAll() } }
        return result
    }

    public func reviseCacheEntry(
        resourceKey: String, validatedSinceMs: Int64, activity: CacheActivity, bookkeeping: AnswerBookkeeping,
        revise: @escaping @Sendable ([CacheEntryMetadata]) -> CacheRevision?
    ) async throws -> CacheRevisionResult {
        let (result, revised) = try await forgettingRecent(resourceKey) {
            try await writeKeepingRecentEntries { db -> (CacheRevisionResult, RecentCacheEntries.Resource?) in
                try CacheTable.record(db, activity: activity)
                let booked = try AdmissionTable.record(db, bookkeeping)
                let candidates = try CacheTable.candidates(db, resourceKey: resourceKey, validatedSinceMs: validatedSinceMs)
                guard !candidates.isEmpty, let revision = revise(candidates),
                      candidates.contains(where: { $0.id == revision.entryID })
                else { return (CacheRevisionResult(entry: nil, bookkeeping: booked), nil) }
                guard let metadata = try CacheTable.revise(db, revision),
                      let body = try CacheTable.body(db, entryID: revision.entryID)
                else { return (CacheRevisionResult(entry: nil, bookkeeping: booked), nil) }
                // The resource as this transaction leaves it: what the next lookup would read.
                let resource = RecentCacheEntries.Resource(
                    candidates: candidates.map { $0.id == metadata.id ? metadata : $0 },
                    validatedSinceMs: validatedSinceMs, bodies: [metadata.id: body]
                )
                return (CacheRevisionResult(entry: CacheEntry(metadata: metadata, body: body), bookkeeping: booked), resource)
            }
        }
        if let revised {
            // A revalidated entry is about to be asked for again: keep it, written, in memory.
            recentCacheEntries.withLock { $0.remember(revised, resourceKey: resourceKey, readAt: $0.generation) }
        }
        return result
    }

    public func removeCacheEntries(resourceKey: String, activity: CacheActivity) async throws -> Int {
        try await forgettingRecent(resourceKey) { try await writeKeepingRecentEntries { db in
            try CacheTable.record(db, activity: activity)
            return try CacheTable.remove(db, resourceKey: resourceKey)
        } }
    }

    public func invalidateCacheEntries(url: String, activity: CacheActivity) async throws -> Int {
        try await forgettingAllRecent { try await writeKeepingRecentEntries { db in
            try CacheTable.record(db, activity: activity)
            return try CacheTable.invalidate(db, url: url)
        } }
    }

    public func recordCacheActivity(_ activity: CacheActivity) async throws {
        guard !activity.isEmpty else { return }
        // LRU times and counts: nothing a hit serves.
        try await writeKeepingRecentEntries { db in try CacheTable.record(db, activity: activity) }
    }

    public func pruneCache(retention: CacheRetention, activity: CacheActivity) async throws -> CachePruneResult {
        try await write { db in
            // Evict first, so a full file has room for the statistics.
            let result = try CacheTable.enforce(db, retention, expiring: .all)
            try CacheTable.record(db, activity: activity)
            return result
        }
    }

    public func pruneCache(retention: CacheRetention, activity: CacheActivity, recordedAt at: Date) async throws
        -> CachePruneResult {
        try await write { db in
            let result = try CacheTable.enforce(db, retention, expiring: .all)
            try CacheTable.record(db, activity: activity)
            try AdminEventTable.record(
                db, at: at, subject: "cache", target: nil, action: "prune",
                detail: "removed \(result.expired) expired and evicted \(result.evicted) "
                    + "\(result.evicted == 1 ? "entry" : "entries") over the limits"
            )
            return result
        }
    }

    public func clearCache(endpoint: String?, activity: CacheActivity, at: Date) async throws -> CacheClearResult {
        try await write { db in
            // Delete first: on a full disk (or a file at its page cap) the pages it frees are what
            // the statistics and the admin event below are written into.
            let result = try CacheTable.clear(db, endpoint: endpoint)
            try CacheTable.record(db, activity: activity)
            try AdminEventTable.record(
                db, at: at, subject: "cache", target: endpoint, action: "clear",
                detail: "removed \(result.entries) \(result.entries == 1 ? "entry" : "entries") "
                    + "(\(result.bodyBytes) body bytes)"
            )
            return result
        }
    }

    public func cacheTotals() async throws -> CacheTotals {
        try await read { db in try CacheTable.totals(db) }
    }

    public func cacheStatistics(pacificDate: String?) async throws -> [CacheDailyStatistics] {
        try await read { db in try CacheTable.statistics(db, pacificDate: pacificDate) }
    }

    public func acquireCoalescingLease(resourceKey: String, lease: CoalescingLease) async throws -> CoalescingLease {
        try await writeKeepingRecentEntries { db in try CoalescingLeaseTable.acquire(db, resourceKey: resourceKey, lease: lease) }
    }

    public func coalescingLease(resourceKey: String) async throws -> CoalescingLease? {
        try await read { db in try CoalescingLeaseTable.current(db, resourceKey: resourceKey) }
    }

    public func releaseCoalescingLease(resourceKey: String, holder: String) async throws {
        try await writeKeepingRecentEntries { db in try CoalescingLeaseTable.release(db, resourceKey: resourceKey, holder: holder) }
    }
}
