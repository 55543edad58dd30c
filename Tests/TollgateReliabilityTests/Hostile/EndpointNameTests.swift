import Foundation
import Testing
import Tollgate
import TollgateTestSupport

@Suite("Hostile input: endpoint names with quotes, newlines, unicode and SQL")
struct EndpointNameTests {
    static let names = [
        "videos.list",
        "it's \"quoted\"",
        "line\nbreak\r\nand\ttab",
        "ünïcödé.列表.🚦",
        "'; DROP TABLE quota_events; --",
        "\" OR 1=1 --",
        "Robert'); DELETE FROM circuits WHERE ('1'='1",
        "%s%n%x {0} $(rm -rf /) `id`",
        "nul\u{0}inside",
        "nul\u{0}other",
        "",
        String(repeating: "long.", count: 2_000),
    ]
    static let now = utc("2027-03-10T18:00:00Z")
    static let policy = CircuitPolicy(failureThreshold: 2)

    @Test("every name goes through admission, settlement, the cache and every view intact, and stays distinct")
    func namesSurviveIntact() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("names.sqlite"))
        for name in Self.names where !name.isEmpty {
            for attempt in 0..<2 {
                let outcome = try await store.admit(AdmissionRequest(
                    endpoint: name, circuitPolicy: Self.policy, probeToken: "probe-\(attempt)",
                    throttleLimit: ThrottleLimit(requests: 100, per: .seconds(60)),
                    quota: QuotaReservationRequest(bucket: "names", endpoint: name, cost: 3, configuredLimit: 10_000, at: Self.now)
                ))
                guard case .admitted = outcome else {
                    Issue.record("\(name.debugDescription) was refused: \(outcome)")
                    continue
                }
                _ = try await store.settleAttempt(AttemptSettlement(
                    endpoint: name, outcome: .failure, probeToken: nil, circuitPolicy: Self.policy, at: Self.now
                ))
            }
            var activity = CacheActivity()
            activity.count(CacheStatisticsCounts(misses: 1),
                           for: CacheStatisticsKey(pacificDate: PacificDay(containing: Self.now).key, endpoint: name))
            _ = try await store.storeCacheEntry(
                NewCacheEntry(resourceKey: "key-\(name)", variantKey: "", endpoint: name, method: "GET",
                              url: "https://example.com/\(name.utf8.count)", vary: nil, status: 200, headers: [],
                              etag: nil, lastModified: nil, freshUntilMs: nil,
                              nowMs: Int64(Self.now.timeIntervalSince1970 * 1000), body: Data(name.utf8)),
                retention: CacheRetention(maxEntries: 100, maxTotalBodyBytes: 1 << 30, expiredBeforeMs: 0),
                activity: activity
            )
        }
        let expected = Set(Self.names.filter { !$0.isEmpty })

        let usage = try await store.quotaUsage(on: PacificDay(containing: Self.now))
        #expect(Set(usage.map(\.endpoint)) == expected)
        #expect(usage.allSatisfy { $0.units == 6 && $0.calls == 2 })
        let circuits = try await store.allCircuits()
        #expect(Set(circuits.map(\.endpoint)) == expected)
        #expect(circuits.allSatisfy { $0.state == .open })
        for name in expected {
            #expect(try await store.circuit(endpoint: name)?.endpoint == name)
        }
        let statistics = try await store.cacheStatistics(pacificDate: nil)
        #expect(Set(statistics.map(\.endpoint)) == expected)

        // The views sqlite3 users read.
        let views = try await store.read { db -> [String: Set<String>] in
            var views: [String: Set<String>] = [:]
            for view in ["quota_daily", "circuit_status", "throttle_status", "cache_stats"] {
                views[view] = Set(try db.fetchAll(sql: "SELECT endpoint FROM \(view)").compactMap { $0[0].string })
            }
            let cached = try db.fetchAll(sql: "SELECT endpoint, (SELECT body FROM cache_bodies WHERE entry_id = id) FROM cache_entries")
            for row in cached {
                #expect(row[1].data == row[0].string.map { Data($0.utf8) })
            }
            return views
        }
        for (view, endpoints) in views {
            #expect(endpoints == expected, "\(view) changed a name")
        }
        // Nothing the names said was executed.
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        #expect(try StoreInvariants.integrity(store) == "ok")
        #expect(try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM quota_events WHERE kind = 'charge'").int } == expected.count * 2)
    }

    @Test("an empty endpoint name is refused with a typed error, and nothing is written")
    func emptyName() async throws {
        let store = try SQLiteStore(location: .inMemory)
        await #expect(throws: StoreRefusal.self) {
            _ = try await store.admit(AdmissionRequest(
                endpoint: "", circuitPolicy: Self.policy, probeToken: "p",
                throttleLimit: ThrottleLimit(requests: 100, per: .seconds(60)),
                quota: QuotaReservationRequest(bucket: "names", endpoint: "", cost: 1, configuredLimit: 10, at: Self.now)
            ))
        }
        #expect(try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM quota_events").int } == 0)
    }
}
