import Foundation
import Testing
import TollgateCore
import TollgatePostgres
import TollgateSQLite
import TollgateTestSupport

/// What the stores share from the core — the stored-header codec, the rules and their messages —
/// run against every available store: the cases that caught nobody while each store kept a copy.
@Suite("Shared codec and rules conformance")
struct SharedRulesConformanceTests {
    private static let headerText = "ETag: \"v1\"\r\nX-A: b\r\n\r\nCache-Control: max-age=60\r\n"
    private static let expectedFields = [
        CacheHeaderField(name: "ETag", value: "\"v1\""), CacheHeaderField(name: "X-A", value: "b"),
        CacheHeaderField(name: "Cache-Control", value: "max-age=60"),
    ]

    private static func entry() -> NewCacheEntry {
        NewCacheEntry(
            resourceKey: "r", variantKey: "", endpoint: "videos.list", method: "GET", url: "https://api.example.com/r",
            vary: nil, status: 200, headers: [CacheHeaderField(name: "ETag", value: "\"v1\"")], etag: "\"v1\"",
            lastModified: nil, freshUntilMs: nil, nowMs: 1_000, body: Data("body".utf8)
        )
    }

    private static let roomy = CacheRetention(maxEntries: 10, maxTotalBodyBytes: 1 << 20, expiredBeforeMs: 0)

    @Test("header text with CRLF line ends (a hand edit, another writer) reads back field by field",
          arguments: StoreBackend.available)
    func crlfHeaderText(backend: StoreBackend) async throws {
        let fields: [CacheHeaderField]?
        switch backend {
        case .sqlite:
            let directory = try TemporaryDirectory()
            let store = try SQLiteStore(path: directory.path("crlf.sqlite"))
            _ = try await store.storeCacheEntry(Self.entry(), retention: Self.roomy, activity: CacheActivity())
            try await store.write { db in
                try db.execute(sql: "UPDATE cache_entries SET headers = ?", arguments: [Self.headerText])
            }
            fields = try await store.cachedEntry(resourceKey: "r", validatedSinceMs: 0) { $0.first?.id }?.metadata.headers
        case .postgres:
            fields = try await PostgresTestDatabase.with { database in
                let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
                do {
                    _ = try await store.storeCacheEntry(Self.entry(), retention: Self.roomy, activity: CacheActivity())
                    try await database.execute(
                        #"UPDATE cache_entries SET headers = E'ETag: "v1"\r\nX-A: b\r\n\r\nCache-Control: max-age=60\r\n'"#
                    )
                    let read = try await store.cachedEntry(resourceKey: "r", validatedSinceMs: 0) { $0.first?.id }
                    await store.shutdown()
                    return read?.metadata.headers
                } catch {
                    await store.shutdown()
                    throw error
                }
            }
        }
        #expect(fields == Self.expectedFields)
    }

    /// Every call a rule refuses, by name: each store must refuse it before touching its database.
    private static let refusedCalls: [(name: String, call: @Sendable (any ConformingStore) async throws -> Void)] = {
        let now = Date(timeIntervalSince1970: 1_795_291_200)
        let policy = CircuitPolicy()
        @Sendable func reserve(cost: Int = 1, endpoint: String = "e.list", limit: Int = 10) -> QuotaReservationRequest {
            QuotaReservationRequest(bucket: "b", endpoint: endpoint, cost: cost, configuredLimit: limit, at: now)
        }
        return [
            ("negative cost", { _ = try await $0.reserveQuota(reserve(cost: -1)) }),
            ("cost over the maximum", { _ = try await $0.reserveQuota(reserve(cost: QuotaLimits.maximumUnits + 1)) }),
            ("empty endpoint", { _ = try await $0.reserveQuota(reserve(endpoint: "")) }),
            ("whole-bucket endpoint", { _ = try await $0.reserveQuota(reserve(endpoint: "*")) }),
            ("negative configured limit", { _ = try await $0.reserveQuota(reserve(limit: -1)) }),
            ("limit over the maximum", { _ = try await $0.reserveQuota(reserve(limit: QuotaLimits.maximumUnits + 1)) }),
            ("negative operator limit", { _ = try await $0.setQuotaLimit(bucket: "b", limit: -2, configuredLimit: 10, at: now) }),
            ("operator limit over the maximum", {
                _ = try await $0.setQuotaLimit(bucket: "b", limit: QuotaLimits.maximumUnits + 1, configuredLimit: 10, at: now)
            }),
            ("negative reconciled count", {
                _ = try await $0.reconcileQuota(bucket: "b", used: -1, configuredLimit: 10, day: PacificDay(containing: now), at: now)
            }),
            ("unknown reservation", { _ = try await $0.refundQuota(reservationID: 999_999, at: now, reason: nil) }),
            ("invalid throttle limit", {
                _ = try await $0.admitRequest(endpoint: "a", limit: ThrottleLimit(requests: -1, per: .seconds(1)), at: now)
            }),
            ("empty circuit endpoint", { _ = try await $0.admitCircuitRequest(endpoint: "", policy: policy, probeToken: "t", at: now) }),
            ("circuit forced open for no time", {
                _ = try await $0.forceOpenCircuit(endpoint: "a", duration: .zero, policy: policy, at: now)
            }),
            ("circuit policy out of range", {
                _ = try await $0.recordCircuitOutcome(.failure, endpoint: "a", probeToken: nil,
                                                      policy: CircuitPolicy(failureThreshold: 0), at: now)
            }),
        ]
    }()

    @Test("every rule refuses with the same StoreRefusal, word for word, on every store")
    func identicalRuleMessages() async throws {
        var messages: [StoreBackend: [String]] = [:]
        for backend in StoreBackend.available {
            try await backend.withStore { store in
                for refused in Self.refusedCalls {
                    do {
                        try await refused.call(store)
                        Issue.record("\(backend): \(refused.name) was accepted")
                    } catch let refusal as StoreRefusal {
                        messages[backend, default: []].append(refusal.description)
                    }
                }
            }
        }
        let sqlite = try #require(messages[.sqlite])
        #expect(sqlite.count == Self.refusedCalls.count)
        #expect(Set(sqlite).count == sqlite.count, "each rule says what it refuses: \(sqlite)")
        if let postgres = messages[.postgres] {
            for (index, refused) in Self.refusedCalls.enumerated() {
                #expect(postgres[index] == sqlite[index], "\(refused.name)")
            }
        }
    }
}
