import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateProxy
import TollgateTestSupport

/// A proxy in this process in front of a scripted upstream.
struct ProxyUnderTest {
    let gate: ScriptedGate
    let proxy: GateProxy

    init(upstream: String, idleTimeout: Duration = .seconds(30), maximumConnections: Int = 256) async throws {
        gate = try ScriptedGate(.asyncHTTPClient)
        proxy = try await GateProxy.start(
            gate: gate.gate, upstream: URL(string: upstream)!, listen: try LoopbackAddress(parsing: "127.0.0.1:0"),
            idleTimeout: idleTimeout, maximumConnections: maximumConnections
        )
    }

    var port: Int { proxy.address.port }

    func get(_ target: String, headers: [String] = [], body: Data = Data()) async throws -> RawHTTPClient.Answer {
        var text = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for header in headers { text += header + "\r\n" }
        if !body.isEmpty { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        let (port, head) = (self.port, text)
        return try await offCooperativePool { try RawHTTPClient.exchange(port: port, head, body: body) }
    }
}

/// Runs blocking socket work on a thread of its own, so loopback servers in this process keep theirs.
func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

@Suite("Hostile input: the proxy stays in its lane")
struct ProxyHardeningTests {
    @Test("dot segments are resolved before joining, and a path that leaves the upstream's base path is a 400")
    func dotSegments() async throws {
        let upstream = try ScriptedHTTPServer { request in .init(body: "upstream saw \(request.target)") }
        defer { upstream.stop() }
        let harness = try await ProxyUnderTest(upstream: "\(upstream.baseURL)/api/v1")

        for escape in ["/../../admin/secret", "/%2e%2e/%2E%2E/admin/secret", "/a/../../../admin", "/..%2f..%2fadmin/../..",
                       "/..%2F..%2Fadmin", "/..;/..;/admin", "/..%5c..%5cadmin", "/%2e%2e;x=1/admin"] {
            let answer = try await harness.get(escape)
            #expect(answer.status == 400 || String(decoding: answer.body, as: UTF8.self).hasPrefix("upstream saw /api/v1/"),
                    "\(escape) → \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        #expect(upstream.requests.allSatisfy { $0.target.hasPrefix("/api/v1/") }, "\(upstream.requests.map(\.target))")
        #expect(!upstream.requests.contains { $0.target.contains("admin/secret") && !$0.target.hasPrefix("/api/v1/") })
        for refusedPath in ["/../../admin/secret", "/..%2F..%2Fadmin", "/..;/..;/admin", "/..%5C..%5Cadmin"] {
            let refused = try await harness.get(refusedPath)
            #expect(refused.status == 400, "\(refusedPath)")
        }

        let inside = try await harness.get("/x/./y/../videos?id=1")
        #expect(inside.status == 200)
        #expect(String(decoding: inside.body, as: UTF8.self) == "upstream saw /api/v1/x/videos?id=1")
        await harness.proxy.stop()
    }

    @Test("a GET with a body is the client's error: 400, nothing sent, nothing charged, no circuit failure")
    func getWithBody() async throws {
        let upstream = try ScriptedHTTPServer { _ in .init(body: "ok") }
        defer { upstream.stop() }
        let harness = try await ProxyUnderTest(upstream: upstream.baseURL)
        for _ in 0..<3 {
            let answer = try await harness.get("/youtube/v3/videos?id=1", body: Data("x".utf8))
            #expect(answer.status == 400)
            #expect(answer.headers["x-tollgate-units"] == "0")
        }
        #expect(upstream.requests.isEmpty)
        #expect(try await harness.gate.gate.circuit.failureCount(for: "videos.list") == 0)
        #expect(try await harness.gate.gate.quota.remaining() == 10_000)
        let normal = try await harness.get("/youtube/v3/videos?id=1")
        #expect(normal.status == 200)
        await harness.proxy.stop()
    }

    @Test("units charged before a failure are reported: a dead upstream refunds, a 502 says 0")
    func unitsOnFailure() async throws {
        let dead = try ScriptedHTTPServer { _ in .init() }
        dead.stop()
        let harness = try await ProxyUnderTest(upstream: dead.baseURL)
        let answer = try await harness.get("/youtube/v3/videos?id=1")
        #expect(answer.status == 502)
        #expect(answer.headers["x-tollgate-units"] == "0")
        #expect(try await harness.gate.gate.quota.remaining() == 10_000)
        await harness.proxy.stop()
    }

    @Test("slow clients cannot hold the proxy: idle connections are closed and the connection cap frees up")
    func slowClients() async throws {
        let upstream = try ScriptedHTTPServer { _ in .init(body: "ok") }
        defer { upstream.stop() }
        let harness = try await ProxyUnderTest(upstream: upstream.baseURL, idleTimeout: .seconds(1), maximumConnections: 2)
        let port = harness.port
        // Two clients that open a connection and send half a request head, then nothing.
        let slow = try (0..<2).map { _ in try RawHTTPClient.connect(port: port) }
        for descriptor in slow {
            _ = Array("GET /youtube/v3/videos?id=1 HTTP/1.1\r\nHost: x\r\n".utf8).withUnsafeBytes {
                PortableSockets.send(descriptor, $0)
            }
        }
        let closed = try await offCooperativePool { slow.map { RawHTTPClient.isClosedByServer($0, within: 10) } }
        #expect(closed == [true, true], "the proxy closed the slow connections")
        slow.forEach { close($0) }
        let answer = try await harness.get("/youtube/v3/videos?id=1")
        #expect(answer.status == 200, "a new client is served once the slow ones are gone")
        await harness.proxy.stop()
    }

    @Test("extension methods pass through as the client spelled them, M-SEARCH included")
    func extensionMethods() async throws {
        let upstream = try ScriptedHTTPServer { request in .init(body: "\(request.method) \(request.target)") }
        defer { upstream.stop() }
        let harness = try await ProxyUnderTest(upstream: upstream.baseURL)
        let port = harness.port
        for method in ["M-SEARCH", "PURGE", "REPORT", "PROPFIND"] {
            let answer = try await offCooperativePool {
                try RawHTTPClient.exchange(port: port, "\(method) /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            }
            #expect(answer.status == 200, "\(method)")
            #expect(String(decoding: answer.body, as: UTF8.self) == "\(method) /x")
        }
        await harness.proxy.stop()
    }
}
