import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

/// The entries a store keeps in memory after reading them must never outlive the rows they came
/// from: whoever changes those rows — this store, another store on the file, another process.
@Suite("Recent cache entries in memory")
struct RecentCacheEntriesTests {
    private static let roomy = CacheRetention(maxEntries: 1000, maxTotalBodyBytes: 1 << 30, expiredBeforeMs: 0)

    private static func entry(_ resource: String, body: String, etag: String = "\"v1\"", at nowMs: Int64 = 1_000) -> NewCacheEntry {
        NewCacheEntry(
            resourceKey: resource, variantKey: "", endpoint: "videos.list", method: "GET",
            url: "https://api.example.com/\(resource)", vary: nil, status: 200,
            headers: [CacheHeaderField(name: "ETag", value: etag)], etag: etag, lastModified: nil,
            freshUntilMs: nil, nowMs: nowMs, body: Data(body.utf8)
        )
    }

    private static func body(_ store: SQLiteStore, _ resource: String, since: Int64 = 0) async throws -> String? {
        try await store.cachedEntry(resourceKey: resource, validatedSinceMs: since) { $0.first?.id }
            .map { String(decoding: $0.body, as: UTF8.self) }
    }

    private static func remembered(_ store: SQLiteStore, _ resource: String) -> Bool {
        store.recentCacheEntries.withLock { recent in
            if case .known = recent.lookup(resourceKey: resource, validatedSinceMs: 0, selectVariant: { $0.first?.id }) {
                return true
            }
            return false
        }
    }

    @Test("a second lookup is answered from memory; this store's own replacement, revision and removal are seen")
    func ownWritesAreSeen() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("cache.sqlite"))
        _ = try await store.storeCacheEntry(Self.entry("a", body: "first"), retention: Self.roomy, activity: CacheActivity())
        #expect(try await Self.body(store, "a") == "first")
        #expect(Self.remembered(store, "a"))
        #expect(try await Self.body(store, "a") == "first")

        _ = try await store.storeCacheEntry(Self.entry("a", body: "second", at: 2_000), retention: Self.roomy,
                                            activity: CacheActivity())
        #expect(!Self.remembered(store, "a"))
        #expect(try await Self.body(store, "a") == "second")

        let revised = try await store.reviseCacheEntry(resourceKey: "a", validatedSinceMs: 0, activity: CacheActivity()) { candidates in
            CacheRevision(entryID: candidates[0].id, headers: [CacheHeaderField(name: "ETag", value: "\"v2\"")],
                          etag: "\"v2\"", lastModified: nil, freshUntilMs: nil, nowMs: 3_000)
        }
        #expect(revised?.metadata.etag == "\"v2\"")
        let afterRevision = try await store.cachedEntry(resourceKey: "a", validatedSinceMs: 0) { $0.first?.id }
        #expect(afterRevision?.metadata.etag == "\"v2\"")
        #expect(afterRevision?.metadata.validatedAtMs == 3_000)

        #expect(try await store.removeCacheEntries(resourceKey: "a", activity: CacheActivity()) == 1)
        #expect(try await Self.body(store, "a") == nil)
    }

    @Test("an LRU touch keeps what is remembered; a raw write through the store forgets everything")
    func touchesKeepRawWritesForget() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("cache.sqlite"))
        let stored = try await store.storeCacheEntry(Self.entry("a", body: "first"), retention: Self.roomy,
                                                     activity: CacheActivity())
        #expect(try await Self.body(store, "a") == "first")
        var activity = CacheActivity()
        activity.touch(stored.entry.id, atMs: 5_000)
        try await store.recordCacheActivity(activity)
        #expect(Self.remembered(store, "a"))

        try await store.write { db in try db.execute(sql: "UPDATE cache_bodies SET body = ?", arguments: [Data("edited".utf8)]) }
        #expect(!Self.remembered(store, "a"))
        #expect(try await Self.body(store, "a") == "edited")
    }

    @Test("a change by another store on the same file is seen at the next lookup")
    func anotherConnectionsCommitIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("cache.sqlite")
        let store = try SQLiteStore(path: path)
        let other = try SQLiteStore(path: path)
        _ = try await store.storeCacheEntry(Self.entry("a", body: "first"), retention: Self.roomy, activity: CacheActivity())
        #expect(try await Self.body(store, "a") == "first")
        #expect(try await Self.body(store, "a") == "first")

        try await other.write { db in try db.execute(sql: "UPDATE cache_bodies SET body = ?", arguments: [Data("theirs".utf8)]) }
        #expect(try await Self.body(store, "a") == "theirs")
        // A commit elsewhere that touches no cache row forgets as much: the version is the file's.
        #expect(Self.remembered(store, "a"))
        _ = try await other.resetThrottle(endpoint: nil, at: Date())
        let version = try #require(store.dataVersionIfFree())
        store.recentCacheEntries.withLock { $0.observe(dataVersion: version) }
        #expect(!Self.remembered(store, "a"))
        #expect(try await Self.body(store, "a") == "theirs")
    }

    @Test("a change by another process is seen at the next lookup")
    func anotherProcessIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("cache.sqlite")
        let store = try SQLiteStore(path: path)
        // The worker stores resource "w-0" with a body of 100 zero bytes.
        _ = try await store.storeCacheEntry(Self.entry("w-0", body: "mine"), retention: Self.roomy, activity: CacheActivity())
        #expect(try await Self.body(store, "w-0") == "mine")
        #expect(Self.remembered(store, "w-0"))

        let results = try await WorkerProcess.runConcurrently("cache-store", count: 1) { _ in [path, "w", "1", "1000"] }
        #expect(results.map(\.status) == [0])
        let seen = try await store.cachedEntry(resourceKey: "w-0", validatedSinceMs: 0) { $0.first?.id }
        #expect(seen?.body == Data(repeating: 0, count: 100))
    }

    @Test("the WAL-index header a hit looks at changes with every commit, this store's or another's, and with nothing else")
    func walIndexHeaderShowsCommits() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("cache.sqlite")
        let store = try SQLiteStore(path: path)
        let other = try SQLiteStore(path: path)
        let watch = try #require(store.walIndexWatch, "a file in WAL mode has a -shm file to watch")
        #expect(try SQLiteStore(location: .inMemory).walIndexWatch == nil)

        let before = try #require(watch.header())
        _ = try await store.read { db in try db.fetchValue(sql: "SELECT count(*) FROM cache_entries").int }
        _ = try await Self.body(store, "a")
        #expect(watch.header() == before, "reads commit nothing")

        _ = try await other.storeCacheEntry(Self.entry("a", body: "theirs"), retention: Self.roomy, activity: CacheActivity())
        let afterTheirs = try #require(watch.header())
        #expect(afterTheirs != before)
        #expect(try await Self.body(store, "a") == "theirs")
        _ = try await store.resetThrottle(endpoint: nil, at: Date())
        #expect(watch.header() != afterTheirs, "this store's own commit changes it too")
    }

    @Test("after this store's own commit no pragma runs to learn that nothing else changed; another store's commit is still seen")
    func ownCommitKeepsTheDataVersion() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("cache.sqlite")
        let store = try SQLiteStore(path: path)
        let other = try SQLiteStore(path: path)
        let first = try #require(store.dataVersionIfFree())
        let pragmas = store.dataVersionPragmas.load(ordering: .relaxed)

        for _ in 0..<5 {
            _ = try await store.resetThrottle(endpoint: nil, at: Date())
            #expect(store.dataVersionIfFree() == first)
        }
        #expect(store.dataVersionPragmas.load(ordering: .relaxed) == pragmas, "own commits need no read transaction")

        // Another connection commits between two of this store's: the count moves by two, the pragma runs.
        _ = try await other.resetThrottle(endpoint: nil, at: Date())
        _ = try await store.resetThrottle(endpoint: nil, at: Date())
        let afterTheirs = try #require(store.dataVersionIfFree())
        #expect(afterTheirs != first)
        #expect(store.dataVersionPragmas.load(ordering: .relaxed) == pragmas + 1)
        _ = try await other.resetThrottle(endpoint: nil, at: Date())
        #expect(store.dataVersionIfFree() != afterTheirs)
    }

    @Test("a read-only store on a file in rollback-journal mode watches nothing and creates no -shm file")
    func rollbackJournalFileHasNoWatch() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("cache.sqlite")
        _ = try SQLiteStore(path: path)
        try Database(path: path, busyTimeout: .seconds(1)).execute(sql: "PRAGMA journal_mode = DELETE")
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"))
        let reader = try SQLiteStore(path: path, configuration: SQLiteStore.Configuration(access: .readOnly))
        #expect(reader.walIndexWatch == nil)
        #expect(try await Self.body(reader, "a") == nil)
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"), "a read-only store creates nothing")
    }

    @Test("a lookup that wants variants older than memory holds reads the file")
    func olderCutoffReadsTheFile() async throws {
        let store = try SQLiteStore(location: .inMemory)
        _ = try await store.storeCacheEntry(Self.entry("a", body: "old", at: 1_000), retention: Self.roomy,
                                            activity: CacheActivity())
        #expect(try await Self.body(store, "a", since: 2_000) == nil)
        #expect(try await Self.body(store, "a", since: 0) == "old")
    }

    @Test("memory keeps to its budget, oldest first")
    func budget() {
        var recent = RecentCacheEntries(maximumResources: 2, maximumBodyBytes: 1 << 20)
        recent.observe(dataVersion: 1)
        for name in ["a", "b", "c"] {
            let metadata = CacheEntryMetadata(
                id: Int64(name.unicodeScalars.first!.value), resourceKey: name, variantKey: "", endpoint: "e",
                method: "GET", url: name, vary: nil, status: 200, headers: [], etag: nil, lastModified: nil,
                bodySize: 1, storedAtMs: 0, validatedAtMs: 0, freshUntilMs: nil, lastAccessMs: 0, hitCount: 0
            )
            recent.remember(.init(candidates: [metadata], validatedSinceMs: 0, bodies: [metadata.id: Data([1])]),
                            resourceKey: name, readAt: recent.generation)
        }
        func known(_ name: String) -> Bool {
            if case .known = recent.lookup(resourceKey: name, validatedSinceMs: 0, selectVariant: { $0.first?.id }) { return true }
            return false
        }
        #expect(!known("a"))
        #expect(known("b"))
        #expect(known("c"))
        // A read that began before a forgetting is not remembered.
        let before = recent.generation
        recent.forget(resourceKey: "b")
        let metadata = CacheEntryMetadata(
            id: 1, resourceKey: "d", variantKey: "", endpoint: "e", method: "GET", url: "d", vary: nil, status: 200,
            headers: [], etag: nil, lastModified: nil, bodySize: 1, storedAtMs: 0, validatedAtMs: 0, freshUntilMs: nil,
            lastAccessMs: 0, hitCount: 0
        )
        recent.remember(.init(candidates: [metadata], validatedSinceMs: 0, bodies: [1: Data([1])]), resourceKey: "d", readAt: before)
        #expect(!known("d"))
        // Another connection's commit forgets everything.
        recent.observe(dataVersion: 2)
        #expect(!known("c"))
    }
}
