import Foundation
import Testing
import Tollgate
import TollgateAdmin
import TollgateSQLite
import TollgateTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 36: the operators' listener as a hostile client or web page would meet it.
@Suite("The admin listener: idle connections closed, connections capped, loopback names only, one token")
struct AdminListenerHardeningTests {
    private static func start(
        token: String? = nil, idleTimeout: Duration = .seconds(10), maximumConnections: Int = 64
    ) async throws -> (AdminServer, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let reader = OperatorsSnapshotReader(storage: try SQLiteStore(path: directory.path("admin.sqlite"), logger: quiet))
        let admin = try await AdminServer.start(
            listen: try AdminAddress(parsing: "127.0.0.1:0"), exposition: MetricsExposition(process: nil, reader: reader, logger: quiet),
            token: token, idleTimeout: idleTimeout, maximumConnections: maximumConnections, logger: quiet
        )
        return (admin, directory)
    }

    private static func get(_ port: Int, _ target: String, host: String, extra: String = "") throws -> RawHTTPClient.Answer {
        try RawHTTPClient.exchange(port: port, "GET \(target) HTTP/1.1\r\nHost: \(host)\r\n\(extra)Connection: close\r\n\r\n")
    }

    @Test("a request addressed to another name (DNS rebinding) is answered 421; loopback names are served")
    func loopbackNamesOnly() async throws {
        let (admin, directory) = try await Self.start()
        defer { Task { await admin.stop() } }
        _ = directory
        let port = admin.address.port
        let rebound = try await offPool { try Self.get(port, "/api/snapshot", host: "attacker.example:\(port)") }
        #expect(rebound.status == 421)
        #expect(!String(decoding: rebound.body, as: UTF8.self).contains("sqlite"), "nothing of the store")
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST", "[::1]:\(port)"] {
            let served = try await offPool { try Self.get(port, "/metrics", host: host) }
            #expect(served.status == 200, "\(host)")
        }
    }

    @Test("one token per request: several ?token= values are refused even when one is right")
    func oneToken() async throws {
        let (admin, directory) = try await Self.start(token: "right-token")
        defer { Task { await admin.stop() } }
        _ = directory
        let port = admin.address.port
        let host = "127.0.0.1:\(port)"
        let guesses = (0..<50).map { "token=guess\($0)" }.joined(separator: "&")
        #expect(try await offPool { try Self.get(port, "/metrics?\(guesses)&token=right-token", host: host) }.status == 401)
        #expect(try await offPool {
            try Self.get(port, "/metrics?token=right-token", host: host, extra: "Authorization: Bearer wrong\r\n")
        }.status == 401)
        #expect(try await offPool { try Self.get(port, "/metrics?token=right-token", host: host) }.status == 200)
        #expect(try await offPool {
            try Self.get(port, "/metrics", host: host, extra: "Authorization: Bearer right-token\r\n")
        }.status == 200)
    }

    @Test("a connection that sends nothing is closed after the idle timeout")
    func idleClosed() async throws {
        let (admin, directory) = try await Self.start(idleTimeout: .milliseconds(300))
        defer { Task { await admin.stop() } }
        _ = directory
        let descriptor = try RawHTTPClient.connect(port: admin.address.port)
        defer { close(descriptor) }
        #expect(try await offPool { RawHTTPClient.isClosedByServer(descriptor, within: 5) })
    }

    @Test("past its connection cap the listener takes no more until one closes")
    func connectionCap() async throws {
        let (admin, directory) = try await Self.start(maximumConnections: 2)
        defer { Task { await admin.stop() } }
        _ = directory
        let port = admin.address.port
        // Two connections held open, each known to be accepted: it answered a keep-alive request.
        let held = try (0..<2).map { _ in try RawHTTPClient.connect(port: port) }
        for descriptor in held {
            let keepAlive = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            _ = keepAlive.withUnsafeBytes { PortableSockets.send(descriptor, $0) }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            #expect(recv(descriptor, &buffer, buffer.count, 0) > 0)
        }
        // The third is queued by the kernel, not served: no answer while two are held.
        let third = try RawHTTPClient.connect(port: port)
        defer { close(third) }
        let request = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { PortableSockets.send(third, $0) }
        var timeout = timeval(tv_sec: 0, tv_usec: 300_000)
        setsockopt(third, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        #expect(recv(third, &byte, 1, 0) < 0, "answered past the cap")
        for descriptor in held { close(descriptor) }
        var patient = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(third, SOL_SOCKET, SO_RCVTIMEO, &patient, socklen_t(MemoryLayout<timeval>.size))
        #expect(recv(third, &byte, 1, 0) == 1, "served once a connection closed")
    }

    @Test("/metrics over 10,000 endpoint names renders every series once, parsed by Prometheus's own parser")
    func tenThousandNames() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("many.sqlite"), logger: quiet)
        let today = PacificDay(containing: Date()).key
        let ledger = try QuotaLedger(storage: store, configuration: GateConfiguration.youTubeDataAPIv3.quota, logger: quiet)
        try await ledger.reserve(endpoint: "videos.list")
        try await store.write { db in
            try db.execute(sql: """
                WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
                INSERT INTO quota_usage (pacific_date, bucket, endpoint, units, calls)
                SELECT '\(today)', 'youtube', 'GET /e' || i, 1, 1 FROM n
                """)
            try db.execute(sql: """
                WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
                INSERT INTO circuits (endpoint, updated_at_ms) SELECT 'GET /e' || i, 0 FROM n
                """)
        }
        let exposition = MetricsExposition(process: nil, reader: OperatorsSnapshotReader(storage: store), logger: quiet)
        let started = ContinuousClock.now
        let text = await exposition.render()
        let took = ContinuousClock.now - started
        let families = try PrometheusTextParser.parse(text)
        #expect(families.family("tollgate_quota_endpoint_used_units")?.samples.count == 10_001, "the 10,000 and videos.list")
        #expect(families.family("tollgate_circuit_state")?.samples.count == 30_000)
        print("/metrics rendered 10,000 endpoints (\(text.utf8.count) bytes) in \(took)")
    }
}
