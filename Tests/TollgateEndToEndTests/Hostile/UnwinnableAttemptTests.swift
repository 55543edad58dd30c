import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateAsyncHTTPClient
import TollgateTestSupport

/// DESIGN.md, "Nothing is spent on what cannot succeed": a failure no retry can fix is not
/// retried; one that provably never reached the server's application is refunded and is no
/// circuit failure (issue 31, item 3).
@Suite("Hostile input: no unit is spent on an attempt that cannot succeed")
struct UnwinnableAttemptTests {
    @Test("a certificate that does not verify: one attempt, refunded, no circuit failure, nothing reached the server",
          arguments: TransportKind.allCases)
    func untrustedCertificate(kind: TransportKind) async throws {
        let directory = try TemporaryDirectory()
        let server = try await TLSTestServer(in: directory)
        let harness = try ScriptedGate(kind)
        let before = try await harness.gate.quota.remaining()

        let failure = await #expect(throws: GateFailure.self) {
            _ = try await harness.gate.sendReportingCost(
                HTTPRequest(url: URL(string: "\(server.baseURL)/youtube/v3/videos?id=1")!), endpoint: "videos.list"
            )
        }
        await server.stop()
        let error = try #require(failure?.error as? HTTPTransportError, "\(String(describing: failure?.error))")
        guard case .tlsFailure = error else {
            Issue.record("expected tlsFailure, got \(error)")
            return
        }
        #expect(!error.mayHaveReachedServer)
        #expect(failure?.attempts == 1, "no retry can make the certificate verify")
        #expect(failure?.unitsCharged == 0)
        #expect(try await harness.gate.quota.remaining() == before)
        #expect(try await harness.gate.circuit.failureCount(for: "videos.list") == 0, "the server is not unwell")
        #expect(harness.simulatedClock?.sleeps.isEmpty == true)
        #expect(server.requestCount == 0)
    }

    @Test("trusting the server's certificate through the transport's client makes the same request succeed")
    func trustedCertificate() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TLSTestServer(in: directory, body: "behind a private CA")
        let authorities = try CertificateAuthorities(file: server.certificate.certificatePath)
        let client = AsyncHTTPClientTransport.makeClient(trusting: authorities)
        let harness = try ScriptedGate(transport: AsyncHTTPClientTransport(client: client, timeout: .seconds(10)))

        let answer = try await harness.gate.send(
            HTTPRequest(url: URL(string: "\(server.baseURL)/youtube/v3/videos?id=1")!), endpoint: "videos.list"
        )
        try await client.shutdown()
        await server.stop()
        #expect(answer.status.code == 200)
        #expect(String(decoding: answer.body, as: UTF8.self) == "behind a private CA")
        #expect(answer.unitsCharged == 1)
        #expect(server.requestCount == 1)
    }

    /// Answers no HTTP/1.1 parser may accept, each as the server's whole answer.
    static let malformedAnswers: [(name: String, headers: [(name: String, value: String)])] = [
        ("two Content-Lengths", [("Content-Length", "2"), ("Content-Length", "3")]),
        ("Content-Length and Transfer-Encoding", [("Content-Length", "2"), ("Transfer-Encoding", "chunked")]),
        ("a control character in a field value", [("X-Control", "a\u{01}b"), ("Content-Length", "2")]),
        ("a 1 MB header field", [("X-Huge", String(repeating: "a", count: 1 << 20)), ("Content-Length", "2")]),
        ("5,000 header fields", (0..<5_000).map { ("X-Field-\($0)", "value-\($0)") } + [("Content-Length", "2")]),
    ]

    @Test("a malformed answer is charged once and never retried", arguments: 0..<malformedAnswers.count)
    func malformedAnswer(index: Int) async throws {
        let answer = Self.malformedAnswers[index]
        let origin = try ScriptedHTTPServer { _ in .init(headers: answer.headers, body: "ok") }
        defer { origin.stop() }
        let harness = try ScriptedGate(.asyncHTTPClient)
        let before = try await harness.gate.quota.remaining()

        let failure = await #expect(throws: GateFailure.self, "\(answer.name)") {
            _ = try await harness.gate.sendReportingCost(
                HTTPRequest(url: URL(string: "\(origin.baseURL)/youtube/v3/videos?id=1")!), endpoint: "videos.list"
            )
        }
        let error = failure?.error as? HTTPTransportError
        guard case .malformedResponse? = error else {
            Issue.record("\(answer.name): expected malformedResponse, got \(String(describing: failure?.error))")
            return
        }
        #expect(failure?.attempts == 1, "\(answer.name): a retry gets the same answer")
        #expect(failure?.unitsCharged == 1, "\(answer.name): it reached the server: charged, once")
        #expect(try await harness.gate.quota.remaining() == before - 1)
        #expect(origin.requests.count == 1)
        #expect(harness.simulatedClock?.sleeps.isEmpty == true)
    }

    @Test("Retry-After: 0 on a 503 waits the schedule's own delays, not nothing", arguments: TransportKind.allCases)
    func retryAfterZero(kind: TransportKind) async throws {
        let origin = try ScriptedHTTPServer { _ in .init(status: 503, headers: [("Retry-After", "0")], body: "busy") }
        defer { origin.stop() }
        let harness = try ScriptedGate(kind)

        let answer = try await harness.gate.send(
            HTTPRequest(url: URL(string: "\(origin.baseURL)/youtube/v3/videos?id=1")!), endpoint: "videos.list"
        )
        #expect(answer.status.code == 503)
        #expect(answer.attempts == 4)
        // GateHarness's configuration turns jitter off: the schedule is exact.
        #expect(harness.simulatedClock?.sleeps == [.seconds(1), .seconds(2), .seconds(4)])
    }

    @Test("a redirect back to a URL already visited ends the chain: the redirect is returned, one unit spent",
          arguments: TransportKind.allCases)
    func redirectLoop(kind: TransportKind) async throws {
        let origin = try ScriptedHTTPServer { request in
            switch request.target {
            case "/self": .init(status: 302, headers: [("Location", "/self")])
            case "/ping": .init(status: 307, headers: [("Location", "/pong")])
            default: .init(status: 307, headers: [("Location", "\(request.target == "/pong" ? "/ping" : "/")")])
            }
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(kind)

        let loop = try await harness.gate.send(HTTPRequest(url: URL(string: "\(origin.baseURL)/self")!), endpoint: "videos.list")
        #expect(loop.status.code == 302)
        #expect(loop.unitsCharged == 1)
        #expect(loop.redirects.isEmpty)
        #expect(origin.requests.count == 1)

        let pingPong = try await harness.gate.send(HTTPRequest(url: URL(string: "\(origin.baseURL)/ping")!),
                                                   endpoint: "videos.list")
        #expect(pingPong.status.code == 307)
        #expect(pingPong.unitsCharged == 2, "/ping, /pong, and /ping again is not sent")
        #expect(pingPong.redirects.map(\.path) == ["/pong"])
        #expect(origin.requests.map(\.target) == ["/self", "/ping", "/pong"])
    }
}
