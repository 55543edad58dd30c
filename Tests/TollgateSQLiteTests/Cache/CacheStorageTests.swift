import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

/// An entry to store, with enough defaults that each test names only what it checks.
private func newEntry(
    _ resource: String, variant: String = "", vary: String? = nil, etag: String? = "\"v1\"",
    body: String = "body", at nowMs: Int64 = 1_000, headers: [CacheHeaderField] = [], endpoint: String = "videos.list"
) -> NewCacheEntry {
    NewCacheEntry(
        resourceKey: resource, variantKey: variant, endpoint: endpoint, method: "GET",
        url: "https://api.example.com/\(resource)", vary: vary, status: 200,
        headers: headers.isEmpty ? [CacheHeaderField(name: "ETag", value: etag ?? "")] : headers,
        etag: etag, lastModified: nil, freshUntilMs: nil, nowMs: nowMs, body: Data(body.utf8)
    )
}

private let roomy = CacheRetention(maxEntries: 1000, maxTotalBodyBytes: 1 << 30, expiredBeforeMs: 0)

/// What only SQLite's schema shows (body rows, triggers, query plans); the operations themselves,
/// on both stores, are in TollgatePostgresTests' CacheConformanceTests, which always runs on SQLite.
@Suite("Cache store operations")
struct CacheStorageTests {
    @Test("a stored entry reads back with its body; a replacement keeps its id and the triggers keep the totals")
    func storeReadReplace() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("cache.sqlite"))
        let first = try await store.storeCacheEntry(newEntry("a", body: "12345"), retention: roomy, activity: CacheActivity())
        #expect(first.replaced == false)
        #expect(try await store.cacheTotals() == CacheTotals(entries: 1, bodyBytes: 5))

        let read = try await store.cachedEntry(resourceKey: "a", validatedSinceMs: 0) { $0.first?.id }
        #expect(read?.body == Data("12345".utf8))
        #expect(read?.metadata.etag == "\"v1\"")
        #expect(read?.metadata.headers == [CacheHeaderField(name: "ETag", value: "\"v1\"")])

        let second = try await store.storeCacheEntry(
            newEntry("a", etag: "\"v2\"", body: "123", at: 2_000), retention: roomy, activity: CacheActivity()
        )
        #expect(second.replaced)
        #expect(second.entry.id == first.entry.id)
        #expect(second.entry.etag == "\"v2\"")
        #expect(try await store.cacheTotals() == CacheTotals(entries: 1, bodyBytes: 3))
        let bodies = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM cache_bodies").int }
        #expect(bodies == 1)

        // The selector decides: nothing selected, nothing returned.
        #expect(try await store.cachedEntry(resourceKey: "a", validatedSinceMs: 0) { _ in nil } == nil)
        // Entries validated before the cutoff are never candidates.
        #expect(try await store.cachedEntry(resourceKey: "a", validatedSinceMs: 2_001) { $0.first?.id } == nil)
    }

    @Test("eviction by bytes removes least recently used entries until the budget holds, never the new one")
    func evictionByBytes() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let budget = CacheRetention(maxEntries: 100, maxTotalBodyBytes: 10, expiredBeforeMs: 0)
        for (index, name) in ["a", "b", "c"].enumerated() {
            _ = try await store.storeCacheEntry(
                newEntry(name, body: "xxxx", at: Int64(1_000 + index)), retention: budget, activity: CacheActivity()
            )
        }
        // 12 bytes > 10: "a" went when "c" arrived.
        #expect(try await store.cacheTotals() == CacheTotals(entries: 2, bodyBytes: 8))
        let result = try await store.storeCacheEntry(
            newEntry("big", body: "0123456789", at: 2_000), retention: budget, activity: CacheActivity()
        )
        #expect(result.pruned.evicted == 2)
        #expect(try await store.cacheTotals() == CacheTotals(entries: 1, bodyBytes: 10))
        let bodies = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM cache_bodies").int }
        #expect(bodies == 1, "bodies go with their entries")
    }

    @Test("a 304 revision and LRU touches never write the body row")
    func bodyIsNotRewritten() async throws {
        let store = try SQLiteStore(location: .inMemory) // one connection: the temporary trigger sees every write
        let stored = try await store.storeCacheEntry(newEntry("a", body: "payload"), retention: roomy, activity: CacheActivity())
        try await store.write { db in
            try db.executeScript("""
                CREATE TEMP TABLE body_writes (kind TEXT);
                CREATE TEMP TRIGGER body_updated AFTER UPDATE ON cache_bodies BEGIN INSERT INTO body_writes VALUES ('update'); END;
                CREATE TEMP TRIGGER body_inserted AFTER INSERT ON cache_bodies BEGIN INSERT INTO body_writes VALUES ('insert'); END;
                """)
        }
        var activity = CacheActivity()
        activity.touch(stored.entry.id, atMs: 3_000)
        try await store.recordCacheActivity(activity)
        let revised = try await store.reviseCacheEntry(resourceKey: "a", validatedSinceMs: 0, activity: activity) { candidates in
            CacheRevision(entryID: candidates[0].id, headers: [], etag: "\"v2\"", lastModified: nil, freshUntilMs: nil,
                          nowMs: 4_000)
        }
        #expect(revised?.body == Data("payload".utf8))
        let writes = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM body_writes").int }
        #expect(writes == 0)
        // The check can fail: a replacing 200 does write the body.
        _ = try await store.storeCacheEntry(newEntry("a", body: "new"), retention: roomy, activity: CacheActivity())
        let afterReplace = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM body_writes").int }
        #expect(afterReplace == 1)
    }

    @Test("header fields survive the text column; a value with a line break stays one field")
    func headerEncoding() {
        let fields = [
            CacheHeaderField(name: "ETag", value: "W/\"a: b\""),
            CacheHeaderField(name: "X-Empty", value: ""),
            CacheHeaderField(name: "X-Broken", value: "one\ntwo\r\nthree"),
        ]
        let decoded = StoredHeaders.decode(StoredHeaders.encode(fields))
        #expect(decoded.count == 3)
        #expect(decoded[0] == fields[0])
        #expect(decoded[1] == fields[1])
        #expect(decoded[2].value == "one two three")
        #expect(StoredHeaders.decode("garbage\n: \nno separator here\nA: b") == [
            CacheHeaderField(name: "", value: ""), CacheHeaderField(name: "A", value: "b"),
        ])
        // A file edited with CRLF line ends, a value holding ": ", text beyond ASCII, a bare name.
        #expect(StoredHeaders.decode("A: b\r\nX-Ünï: cödé: ✓\r\n\r\nEmpty:\nLast: z") == [
            CacheHeaderField(name: "A", value: "b"), CacheHeaderField(name: "X-Ünï", value: "cödé: ✓"),
            CacheHeaderField(name: "Empty", value: ""), CacheHeaderField(name: "Last", value: "z"),
        ])
    }

    @Test("a cache write expires the entries last used before the cutoff; one used since is never served and goes at an operator's prune")
    func expiryOnWriteByLastUse() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("cache.sqlite"))
        _ = try await store.storeCacheEntry(newEntry("unused", at: 1_000), retention: roomy, activity: CacheActivity())
        let used = try await store.storeCacheEntry(newEntry("used", at: 1_000), retention: roomy, activity: CacheActivity())
        var activity = CacheActivity()
        activity.touch(used.entry.id, atMs: 3_000)
        try await store.recordCacheActivity(activity)

        // Both were validated at 1,000: past a cutoff of 2,000. Only "unused" was also last used before it.
        let expiring = CacheRetention(maxEntries: 1000, maxTotalBodyBytes: 1 << 30, expiredBeforeMs: 2_000)
        let write = try await store.storeCacheEntry(newEntry("new", at: 4_000), retention: expiring, activity: CacheActivity())
        #expect(write.pruned == CachePruneResult(expired: 1, evicted: 0))
        #expect(try await store.cachedEntry(resourceKey: "unused", validatedSinceMs: 0) { $0.first?.id } == nil)
        #expect(try await store.cachedEntry(resourceKey: "used", validatedSinceMs: 2_000) { $0.first?.id } == nil,
                "kept until pruned, but never a candidate past the cutoff")

        let pruned = try await store.pruneCache(retention: expiring, activity: CacheActivity())
        #expect(pruned == CachePruneResult(expired: 1, evicted: 0))
        #expect(try await store.cacheTotals() == CacheTotals(entries: 1, bodyBytes: 4))
        let bodies = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM cache_bodies").int }
        #expect(bodies == 1)
    }

    @Test("every cache statement runs through an index: no table scan, no sort")
    func queryPlansUseIndexes() throws {
        let store = try SQLiteStore(location: .inMemory)
        let statements = [
            "SELECT id FROM cache_entries WHERE resource_key = 'a' AND validated_at_ms >= 0",
            "SELECT body FROM cache_bodies WHERE entry_id = 1",
            "SELECT id, variant_key, vary, hit_count FROM cache_entries WHERE resource_key = 'a'",
            "DELETE FROM cache_entries WHERE resource_key = 'a' AND vary IS NOT NULL",
            "DELETE FROM cache_entries WHERE last_access_ms < 5 AND validated_at_ms < 5",
            "SELECT id FROM cache_entries WHERE id IS NOT 5 ORDER BY last_access_ms, id LIMIT 3",
            "DELETE FROM cache_entries WHERE id = (SELECT id FROM cache_entries WHERE id IS NOT 5 ORDER BY last_access_ms, id LIMIT 1)",
            "DELETE FROM cache_entries WHERE id IN (SELECT id FROM cache_entries WHERE id IS NOT 5 ORDER BY last_access_ms, id LIMIT 3)",
            "UPDATE cache_entries SET last_access_ms = 1 WHERE id = 1",
            "SELECT entries, body_bytes FROM cache_totals WHERE id = 1",
        ]
        try store.read { db in
            for sql in statements {
                let plan = try db.fetchAll(sql: "EXPLAIN QUERY PLAN \(sql)").map { $0[3].string ?? "" }.joined(separator: " | ")
                #expect(!plan.contains("SCAN cache_entries") || plan.contains("INDEX cache_entries_lru"), "\(sql): \(plan)")
                #expect(!plan.contains("TEMP B-TREE"), "\(sql): \(plan)")
                #expect(!plan.contains("SCAN cache_bodies"), "\(sql): \(plan)")
            }
            // Invalidation by URL is a range of the keys' unique index (schema version 8).
            let invalidation = try db.fetchAll(sql: "EXPLAIN QUERY PLAN \(CacheTable.invalidateByURL)",
                                               arguments: ["x\n", "x\u{0B}", "x"])
                .map { $0[3].string ?? "" }.joined()
            #expect(!invalidation.contains("SCAN"), "\(invalidation)")
            #expect(invalidation.contains("USING INDEX sqlite_autoindex_cache_entries_1 (resource_key>? AND resource_key<?)"),
                    "\(invalidation)")
            #expect(invalidation.contains("USING INDEX cache_entries_by_url_unkeyed (url=?)"), "\(invalidation)")
            // The one scan: an operator's prune checks every entry's age (schema version 5).
            let prune = try db.fetchAll(sql: "EXPLAIN QUERY PLAN DELETE FROM cache_entries WHERE validated_at_ms < 5")
            #expect(prune.map { $0[3].string ?? "" }.joined().contains("SCAN cache_entries"))
        }
    }
}
