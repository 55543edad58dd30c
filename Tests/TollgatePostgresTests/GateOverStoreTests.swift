import Foundation
import HTTPTypes
import Synchronization
import Testing
import Tollgate
import TollgatePostgres
import TollgateSQLite

/// The services run over either store unchanged: the gate, with its cache, circuit, throttle and
/// quota ledger, takes requests through a scripted origin.
@Suite("Gate over each store")
struct GateOverStoreTests {
    /// An origin that answers 200 with an ETag, then 304 to a request that carries it.
    final class ScriptedOrigin: HTTPTransport {
        let requests = Mutex<[HTTPRequest]>([])

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            requests.withLock { $0.append(request) }
            if request.headerFields[.ifNoneMatch] == "\"v1\"" {
                var fields = HTTPFields()
                fields[.eTag] = "\"v1\""
                fields[.cacheControl] = "max-age=0"
                return (HTTPResponse(status: .notModified, headerFields: fields), Data())
            }
            var fields = HTTPFields()
            fields[.eTag] = "\"v1\""
            fields[.cacheControl] = "max-age=0"
            fields[.contentType] = "application/json"
            return (HTTPResponse(status: .ok, headerFields: fields), Data(#"{"items":[]}"#.utf8))
        }
    }

    @Test("a request is fetched and charged, then revalidated with its ETag, and the ledger stays sound",
          arguments: StoreBackend.available)
    func fetchThenRevalidate(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let origin = ScriptedOrigin()
            let gate = try Gate(
                storage: store, transport: origin, configuration: .youTubeDataAPIv3, clock: SystemClock(),
                logger: PostgresTestDatabase.quietLogger
            )
            let request = HTTPRequest(
                method: .get, scheme: "https", authority: "www.googleapis.com", path: "/youtube/v3/videos?part=id&id=x"
            )
            let first = try await gate.send(request, endpoint: "videos.list")
            #expect(first.source == .network)
            #expect(first.status == .ok)
            #expect(first.unitsCharged == 1)
            let second = try await gate.send(request, endpoint: "videos.list")
            #expect(second.source == .revalidated)
            #expect(second.body == Data(#"{"items":[]}"#.utf8))
            #expect(origin.requests.withLock { $0.count } == 2)
            #expect(origin.requests.withLock { $0.last?.headerFields[.ifNoneMatch] } == "\"v1\"")
            try await gate.flush()
            #expect(try await store.cacheTotals().entries == 1)
            #expect(try await store.quotaEndpointCharged("videos.list"))
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            #expect(try await store.circuit(endpoint: "videos.list") == nil)
        }
    }

    @Test("a GET whose URL is longer than PostgreSQL's B-tree rows hold is answered and charged on either store: uncached on PostgreSQL, cached on SQLite",
          arguments: StoreBackend.available)
    func urlLongerThanAnIndexRow(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let origin = ScriptedOrigin()
            let gate = try Gate(storage: store, transport: origin, configuration: .youTubeDataAPIv3, clock: SystemClock(),
                                logger: PostgresTestDatabase.quietLogger)
            // 6,000 characters that do not compress, as PostgreSQL would compress a repetitive key.
            var generator = SystemRandomNumberGenerator()
            let noise = String((0..<6_000).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement(using: &generator)! })
            let request = HTTPRequest(method: .get, scheme: "https", authority: "www.googleapis.com",
                                      path: "/youtube/v3/videos?part=id&id=\(noise)")
            let first = try await gate.send(request, endpoint: "videos.list")
            #expect(first.status == .ok)
            #expect(first.unitsCharged == 1)
            let second = try await gate.send(request, endpoint: "videos.list")
            #expect(second.status == .ok)
            try await gate.flush()
            if store.maximumResourceKeyBytes == nil {
                #expect(second.source == .revalidated)
                #expect(try await store.cacheTotals().entries == 1)
            } else {
                #expect(second.source == .network, "not stored, so fetched again in full")
                #expect(try await store.cacheTotals().entries == 0)
            }
            #expect(origin.requests.withLock { $0.count } == 2)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)

            // A key just within the limit is stored on both.
            let fits = HTTPRequest(method: .get, scheme: "https", authority: "www.googleapis.com",
                                   path: "/youtube/v3/videos?part=id&id=\(noise.prefix(1_800))")
            _ = try await gate.send(fits, endpoint: "videos.list")
            #expect(try await gate.send(fits, endpoint: "videos.list").source == .revalidated)
        }
    }

    @Test("a 304 costs what the endpoint documents on either store: settled at 1 of 100, free, or full",
          arguments: StoreBackend.available)
    func notModifiedCost(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            for (cost, expected) in [(NotModifiedCost.units(1), 1), (.free, 0), (.full, 100)] {
                let origin = ScriptedOrigin()
                var configuration = GateConfiguration.youTubeDataAPIv3
                configuration.quota = .youTubeDataAPIv3SinglePool
                configuration.quota.endpointCosts["search.list"]?.notModifiedCost = cost
                let gate = try Gate(storage: store, transport: origin, configuration: configuration, clock: SystemClock(),
                                    logger: PostgresTestDatabase.quietLogger)
                let request = HTTPRequest(method: .get, scheme: "https", authority: "www.googleapis.com",
                                          path: "/youtube/v3/search?part=id&q=\(cost)")
                let before = try await gate.quota.remaining()
                #expect(try await gate.send(request, endpoint: "search.list").unitsCharged == 100)
                let second = try await gate.send(request, endpoint: "search.list")
                #expect(second.source == .revalidated)
                #expect(second.unitsCharged == expected, "\(cost)")
                try await gate.flush()
                #expect(try await gate.quota.remaining() == before - 100 - expected, "\(cost)")
                #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            }
        }
    }

    @Test("when the database is gone, the gate fails closed by default, naming the server, and fails open when asked",
          .enabled(if: PostgresTestDatabase.isConfigured, "TOLLGATE_POSTGRES_URL is not set"),
          arguments: [LedgerFailurePolicy.failClosed, .failOpen])
    func databaseGone(policy: LedgerFailurePolicy) async throws {
        let database = try await PostgresTestDatabase.create()
        let store = try await PostgresStore(
            url: database.url, configuration: .init(connectTimeout: .seconds(1), connectionWait: .seconds(1)),
            logger: PostgresTestDatabase.quietLogger
        )
        try await database.drop()
        let origin = ScriptedOrigin()
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.ledgerFailurePolicy = policy
        let gate = try Gate(
            storage: store, transport: origin, configuration: configuration, clock: SystemClock(),
            logger: PostgresTestDatabase.quietLogger
        )
        let request = HTTPRequest(
            method: .get, scheme: "https", authority: "www.googleapis.com", path: "/youtube/v3/videos?part=id&id=x"
        )
        switch policy {
        case .failClosed:
            let error = await #expect(throws: PostgresStoreError.self) {
                _ = try await gate.send(request, endpoint: "videos.list")
            }
            #expect(error?.description.contains(database.location.description) == true, "\(String(describing: error))")
            #expect(origin.requests.withLock { $0.count } == 0)
        case .failOpen:
            let answer = try await gate.send(request, endpoint: "videos.list")
            #expect(answer.status == .ok)
            #expect(origin.requests.withLock { $0.count } == 1)
        }
        await store.shutdown()
    }
}
