import Foundation
import HTTPTypes
import Testing
import Tollgate
import Logging

@Suite("tmp perf")
struct TmpPerfTests {
    @Test func hitVersusBareRead() async throws {
        let fixture = try CacheFixture()
        let quiet = try ETagCache(storage: fixture.store, clock: fixture.clock, logger: Logger(label: "q", factory: { _ in SwiftLogNoOpLogHandler() }))
        let url = "https://www.googleapis.com/youtube/v3/videos?id=abc&part=snippet&key=AIzaSecretSecret"
        let stored = try #require(try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=86400"), ("Content-Type", "application/json")]),
            body: Data(count: 10 * 1024), for: request(url), endpoint: "e"))
        let id = stored.entryID
        let n = 3000
        for _ in 0..<200 { _ = try await fixture.cache.lookup(request(url), endpoint: "e") }
        let c = ContinuousClock()
        let bare = try await c.measure {
            for _ in 0..<n {
                _ = try await fixture.store.read { db in try db.fetchValue("SELECT body FROM cache_bodies WHERE entry_id = ?", [.integer(id)]) }
            }
        }
        let hit = try await c.measure {
            let r = request(url)
            for _ in 0..<n {
                let l = try await quiet.lookup(r, endpoint: "e")
                precondition(l.isFresh)
            }
        }
        let store = try await c.measure {
            for i in 0..<300 {
                try await fixture.cache.storeResponse(response(200, [("ETag", "\"v\(i)\"")]), body: Data(count: 10 * 1024),
                    for: request("https://a.example.com/\(i)"), endpoint: "e")
            }
        }
        let bareWrite = try await c.measure {
            for i in 0..<300 {
                try await fixture.store.write { db in try db.execute("INSERT INTO admin_events (at_ms, subject, action) VALUES (?, 'x', 'y')", [.int(i)]) }
            }
        }
        let r = request(url)
        let keyTime = try c.measure { for _ in 0..<n { _ = try quiet.key(for: r) } }
        print("PERF key \(keyTime / n)")
        print("PERF bare \(bare / n) hit \(hit / n) ratio \((hit / n) / (bare / n)); store \(store / 300) bareWrite \(bareWrite / 300)")
    }
}
