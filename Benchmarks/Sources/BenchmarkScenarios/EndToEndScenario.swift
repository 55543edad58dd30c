import Foundation
import HTTPTypes
import Tollgate
import BenchmarkFakeAPI
import TollgateSQLite

/// A revalidated request over loopback against the fake API: once through the gate (cache lookup,
/// admission, the conditional request, settlement, the cache's 304 revision) and once as the bare
/// transport sends the same conditional request.
public struct EndToEndScenario: Sendable {
    public let api: FakeYouTubeAPI
    public let gate: Gate
    public let transport: URLSessionTransport
    /// The same transport as the gate sees it, timed.
    public let timed: TimedTransport
    let request: HTTPRequest
    let conditional: HTTPRequest
    let endpoint = "videos.list"

    /// Starts the fake API, opens the store at `path` and primes the cache with one 200.
    /// - Parameter path: The database file.
    /// - Throws: `BenchmarkFailure` when the priming request is not stored; start-up errors.
    public init(path: String) async throws {
        api = try await FakeYouTubeAPI.start()
        transport = URLSessionTransport()
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.quota.bucketLimits = configuration.quota.bucketLimits.mapValues { _ in 1_000_000_000 }
        // Never reached at benchmark rates; a short window keeps its row count realistic (see
        // AdmissionScenario).
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: 1_000_000, per: .milliseconds(2)))
        timed = TimedTransport(transport)
        gate = try Gate(store: try SQLiteStore(path: path), transport: timed, configuration: configuration,
                        clock: SystemClock())
        let url = api.url("videos", ["part": "snippet", "id": "dQw4w9WgXcQ", "key": "AIzaSyBenchmarkKey"])
        request = HTTPRequest(method: .get, url: url)
        let first = try await gate.send(request, endpoint: endpoint)
        guard first.response.status == .ok, let etag = first.response.headerFields[.eTag] else {
            throw BenchmarkFailure("priming request answered \(first.response.status)")
        }
        var conditional = request
        conditional.headerFields[.ifNoneMatch] = etag
        self.conditional = conditional
    }

    /// One revalidated request through the gate.
    /// - Throws: `BenchmarkFailure` unless the cache revalidated it.
    public func throughGate() async throws {
        let response = try await gate.send(request, endpoint: endpoint)
        guard response.source == .revalidated, response.body.count > 0 else {
            throw BenchmarkFailure("expected a revalidated response, got \(response.source)")
        }
    }

    /// The same conditional request through the bare transport.
    /// - Throws: `BenchmarkFailure` unless it answered 304.
    public func bare() async throws {
        let (response, _) = try await transport.send(conditional, body: nil)
        guard response.status.code == 304 else { throw BenchmarkFailure("expected 304, got \(response.status)") }
    }

    /// Stops the fake API.
    public func stop() async { await api.stop() }
}
