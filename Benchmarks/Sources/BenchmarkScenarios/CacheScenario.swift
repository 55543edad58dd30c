import Foundation
import HTTPTypes
import Tollgate
import TollgateSQLite

/// The ETag cache on a file: hits on fresh entries with 10 KiB bodies, and stores of new 200s at
/// capacity, each evicting the least recently used entry.
public struct CacheScenario: Sendable {
    /// The body of every response: 10 KiB.
    public static let body = Data((0..<(10 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    /// How many entries the hits cycle through (their bodies fit in SQLite's page cache, as the
    /// C floor's 100 blobs do).
    public static let hotEntries = 100

    public let store: SQLiteStore
    public let cache: ETagCache
    /// A gate over the same store and cache rules, for fresh hits through ``Gate/send(_:body:endpoint:options:via:)``.
    /// Its transport is never reached: every request it is given is answered from the cache.
    public let gate: Gate
    let hotRequests: [HTTPRequest]
    let endpoint = "videos.list"

    /// Opens the store at `path` and stores the hot entries.
    /// - Parameters:
    ///   - path: The database file (may already hold filler entries: see ``CacheFill``).
    ///   - maxEntries: The cache's capacity.
    /// - Throws: Store and cache errors.
    public init(path: String, maxEntries: Int) async throws {
        store = try SQLiteStore(path: path)
        var configuration = CacheConfiguration()
        configuration.maxEntries = maxEntries
        configuration.maxTotalBodyBytes = Int64.max / 2
        cache = try ETagCache(storage: store, configuration: configuration, clock: SystemClock())
        var gateConfiguration = GateConfiguration.youTubeDataAPIv3
        gateConfiguration.cache = configuration
        gate = try Gate(store: store, transport: URLSessionTransport(), configuration: gateConfiguration,
                        clock: SystemClock())
        hotRequests = (0..<Self.hotEntries).map { Self.request(id: "hot\($0)") }
        for request in hotRequests {
            try await cache.storeResponse(Self.response(), body: Self.body, for: request, endpoint: endpoint)
        }
    }

    /// A YouTube-style GET carrying an API key (which the cache redacts).
    public static func request(id: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: "www.googleapis.com",
                    path: "/youtube/v3/videos?part=snippet&id=\(id)&key=AIzaSyBenchmarkKey")
    }

    /// A cacheable 200: fresh for an hour, with an ETag.
    public static func response() -> HTTPResponse {
        var fields = HTTPFields()
        fields[.contentType] = "application/json; charset=UTF-8"
        fields[.eTag] = "\"v1-etag\""
        fields[.cacheControl] = "private, max-age=3600"
        return HTTPResponse(status: .ok, headerFields: fields)
    }

    /// Fills the cache to `count` entries through the service (for small counts).
    /// - Parameter count: Entries to add.
    /// - Throws: Cache errors.
    public func fillThroughService(_ count: Int) async throws {
        for index in 0..<count {
            try await cache.storeResponse(Self.response(), body: Self.body, for: Self.request(id: "fill\(index)"),
                                          endpoint: endpoint)
        }
    }

    /// One hit: a lookup that finds a fresh entry, with its body and the LRU bookkeeping.
    /// - Parameter index: Chooses which hot entry.
    /// - Throws: `BenchmarkFailure` when the lookup is not a fresh hit.
    public func hit(_ index: Int) async throws {
        let lookup = try await cache.lookup(hotRequests[index % hotRequests.count], endpoint: endpoint)
        guard case .fresh(let cached) = lookup, cached.body.count == Self.body.count else {
            throw BenchmarkFailure("expected a fresh hit, got \(lookup)")
        }
    }

    /// One fresh hit through the whole gate: the cache answers, nothing is admitted or sent.
    /// - Parameter index: Chooses which hot entry.
    /// - Throws: `BenchmarkFailure` when the answer does not come from the cache.
    public func gateHit(_ index: Int) async throws {
        let answer = try await gate.send(hotRequests[index % hotRequests.count], endpoint: endpoint)
        guard answer.source == .cache, answer.body.count == Self.body.count else {
            throw BenchmarkFailure("expected a fresh hit through the gate, got \(answer.source)")
        }
    }

    /// One store: a new 200 with a 10 KiB body; at capacity, it evicts one entry.
    /// - Parameter index: Makes the URL new.
    /// - Throws: `BenchmarkFailure` when nothing was stored.
    public func store(_ index: Int) async throws {
        let stored = try await cache.storeResponse(Self.response(), body: Self.body,
                                                   for: Self.request(id: "new\(index)"), endpoint: endpoint)
        guard stored != nil else { throw BenchmarkFailure("the response was not stored") }
    }

    /// Writes buffered LRU touches and statistics.
    /// - Throws: Store errors.
    public func flush() async throws { try await cache.flush() }
}

/// Fills a cache file with many entries in one transaction of bulk SQL, far faster than one
/// service call per entry. Keys and URLs ascend (the real ones are digests and URLs, spread at
/// random), so every index is built by appending; the trees' depth is the same either way. Filler entries are older (in LRU order) than anything the benchmark
/// stores, so eviction takes them first, and their bodies are small (256 bytes) so a million of
/// them stay a few hundred megabytes on disk; the indexes and tables have the full row count.
public enum CacheFill {
    /// Adds `count` filler entries.
    /// - Parameters:
    ///   - store: The store.
    ///   - count: How many.
    /// - Throws: Store errors.
    public static func fill(_ store: SQLiteStore, count: Int) throws {
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        try store.write { db in
            let firstID = (try db.fetchValue(sql: "SELECT COALESCE(MAX(id), 0) FROM cache_entries").int64 ?? 0) + 1
            try db.execute(
                sql: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?),
                filler(i, url) AS (SELECT i, printf('https://www.googleapis.com/youtube/v3/videos?id=filler%012d&key=REDACTED&part=snippet', ? + i) FROM n)
                INSERT INTO cache_entries (resource_key, variant_key, endpoint, method, url, vary, status, headers,
                    etag, last_modified, body_size, stored_at_ms, validated_at_ms, fresh_until_ms, last_access_ms)
                -- Keyed as the library keys (CacheResourceKey): the URL, a line feed, a digest's 64 hex digits.
                SELECT url || char(10) || printf('%064x', ? + i), '', 'videos.list', 'GET', url,
                    NULL, 200, 'content-type: application/json; charset=UTF-8' || char(10) || 'etag: "f' || i || '"',
                    '"f' || i || '"', NULL, 256, ?, ?, ? + 3600000, ? - 86400000 + i
                FROM filler
                """,
                arguments: [count, firstID, firstID, nowMs, nowMs, nowMs,
                 nowMs]
            )
            try db.execute(
                sql: """
                INSERT INTO cache_bodies (entry_id, body)
                SELECT id, randomblob(256) FROM cache_entries WHERE id >= ?
                """,
                arguments: [firstID]
            )
        }
    }
}
