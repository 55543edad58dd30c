import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateTestSupport
import Synchronization

@Suite("Hostile input: an attempt that never left the machine costs nothing and is not the server's fault")
struct NeverSentTests {
    @Test("a GET with a body that the transport refuses: no retry, no charge, no circuit failure")
    func refusedLocally() async throws {
        let server = try ScriptedHTTPServer { _ in .init(body: "ok") }
        defer { server.stop() }
        let harness = try ScriptedGate(.urlSession)
        let before = try await harness.gate.quota.remaining()

        let failure = await #expect(throws: GateFailure.self) {
            _ = try await harness.gate.sendReportingCost(
                HTTPRequest(url: URL(string: "\(server.baseURL)/videos?id=1")!), body: Data("x".utf8),
                endpoint: "videos.list"
            )
        }
        guard case .invalidRequest? = failure?.error as? HTTPTransportError else {
            Issue.record("expected invalidRequest, got \(String(describing: failure?.error))")
            return
        }
        #expect(failure?.unitsCharged == 0)
        #expect(failure?.attempts == 1, "refused locally: never retried")
        #expect(try await harness.gate.quota.remaining() == before)
        #expect(try await harness.gate.circuit.failureCount(for: "videos.list") == 0)
        #expect(server.requests.isEmpty)
    }

    @Test("an unsupported scheme is the caller's error; an upper-case HTTP scheme is just http",
          arguments: TransportKind.allCases)
    func schemes(kind: TransportKind) async throws {
        let server = try ScriptedHTTPServer { _ in .init(body: "ok") }
        defer { server.stop() }
        let harness = try ScriptedGate(kind)
        let before = try await harness.gate.quota.remaining()

        let upper = HTTPRequest(method: .get, scheme: "HTTP", authority: "127.0.0.1:\(server.port)", path: "/videos?id=1")
        let answer = try await harness.gate.send(upper, endpoint: "videos.list")
        #expect(answer.status.code == 200)
        #expect(answer.unitsCharged == 1)

        let ftp = HTTPRequest(method: .get, scheme: "ftp", authority: "127.0.0.1:\(server.port)", path: "/videos?id=2")
        let failure = await #expect(throws: GateFailure.self) {
            _ = try await harness.gate.sendReportingCost(ftp, endpoint: "videos.list")
        }
        #expect((failure?.error as? HTTPTransportError).map { if case .invalidRequest = $0 { true } else { false } } == true)
        #expect(failure?.unitsCharged == 0)
        #expect(try await harness.gate.quota.remaining() == before - 1)
        #expect(try await harness.gate.circuit.failureCount(for: "videos.list") == 0)
    }

    @Test("a refused connection is refunded on every attempt but counts against the circuit",
          arguments: TransportKind.allCases)
    func connectionRefused(kind: TransportKind) async throws {
        let server = try ScriptedHTTPServer { _ in .init(body: "ok") }
        let port = server.port
        server.stop()
        let harness = try ScriptedGate(kind)
        let before = try await harness.gate.quota.remaining()

        let failure = await #expect(throws: GateFailure.self) {
            _ = try await harness.gate.sendReportingCost(
                HTTPRequest(url: URL(string: "http://127.0.0.1:\(port)/videos?id=1")!), endpoint: "videos.list"
            )
        }
        #expect((failure?.error as? HTTPTransportError)?.mayHaveReachedServer == false, "\(String(describing: failure?.error))")
        #expect(failure?.unitsCharged == 0)
        #expect((failure?.attempts ?? 0) > 1, "a network failure is retried")
        #expect(try await harness.gate.quota.remaining() == before)
        #expect(try await harness.gate.circuit.failureCount(for: "videos.list") == failure?.attempts)
    }
}

@Suite("Quota: the server's quotaExceeded closes exactly the endpoint's buckets")
struct ServerQuotaExhaustionTests {
    @Test("a 403 quotaExceeded for an endpoint charged in two buckets closes both; an endpoint of a third bucket still works")
    func closesEveryBucketOfTheEndpoint() async throws {
        let origin = try ScriptedHTTPServer { request in
            request.target.hasPrefix("/reports")
                ? .init(status: 403, headers: [("Content-Type", "application/json")],
                        body: #"{"error":{"code":403,"errors":[{"reason":"quotaExceeded","domain":"youtube.quota"}]}}"#)
                : .init(headers: [("ETag", "\"v\"")], body: "video")
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(.asyncHTTPClient) { configuration in
            configuration.quota = QuotaConfiguration(
                bucketLimits: ["daily": 100, "calls": 10, "other": 10],
                endpointCosts: [
                    "reports.query": .init(bucket: "daily", units: 5, additionalCharges: [.init(bucket: "calls", units: 1)]),
                    "videos.list": .init(bucket: "other", units: 1),
                ],
                defaultBucket: "daily"
            )
        }
        let spent = await #expect(throws: TollgateError.self) {
            _ = try await harness.gate.send(HTTPRequest(url: URL(string: "\(origin.baseURL)/reports?q=1")!), endpoint: "reports.query")
        }
        #expect(spent != nil)
        #expect(try await harness.gate.quota.status(bucket: "daily").isExhausted)
        #expect(try await harness.gate.quota.status(bucket: "calls").isExhausted)
        #expect(try await !harness.gate.quota.status(bucket: "other").isExhausted)
        await #expect(throws: TollgateError.self) {
            _ = try await harness.gate.send(HTTPRequest(url: URL(string: "\(origin.baseURL)/reports?q=2")!), endpoint: "reports.query")
        }
        let video = try await harness.gate.send(HTTPRequest(url: URL(string: "\(origin.baseURL)/videos?id=1")!), endpoint: "videos.list")
        #expect(video.status.code == 200)
        #expect(origin.requests.count == 2, "the spent endpoint is refused without a request; videos.list is sent")
    }

    @Test("an LLM API's 429 that announces its tokens spent and requests to spare closes the tokens bucket alone: a call charged in requests only is still sent")
    func closesOnlyTheBucketTheAnswerAnnouncesSpent() async throws {
        let origin = try ScriptedHTTPServer { request in
            request.target.hasPrefix("/v1/chat")
                ? .init(status: 429, headers: [
                    ("Content-Type", "application/json"),
                    ("x-ratelimit-limit-requests", "500"), ("x-ratelimit-remaining-requests", "499"),
                    ("x-ratelimit-reset-requests", "120ms"),
                    ("x-ratelimit-limit-tokens", "30000"), ("x-ratelimit-remaining-tokens", "0"),
                    ("x-ratelimit-reset-tokens", "20s"),
                ], body: #"{"error":{"message":"Rate limit reached on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}"#)
                : .init(headers: [("Content-Type", "application/json")], body: #"{"data":[]}"#)
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(.asyncHTTPClient) { configuration in
            configuration.quota = QuotaConfiguration(
                bucketLimits: ["requests": 500, "tokens": 30_000],
                endpointCosts: [
                    "chat": .init(bucket: "requests", units: 1, additionalCharges: [.init(bucket: "tokens", units: 1_000)]),
                    "models": .init(bucket: "requests", units: 1),
                ],
                defaultBucket: "requests"
            )
            configuration.quota.bucketWindows = ["requests": .minute, "tokens": .minute]
            configuration.quota.announcedLimits = ["requests": .init(unit: .requests), "tokens": .init(unit: .tokens)]
            configuration.quotaExhaustedAnswers = [
                QuotaExhaustionRule(status: 429, field: (HTTPField.Name("x-ratelimit-remaining-tokens")!, "0")),
                QuotaExhaustionRule(status: 429, field: (HTTPField.Name("x-ratelimit-remaining-requests")!, "0")),
            ]
        }
        await #expect(throws: TollgateError.self) {
            _ = try await harness.gate.send(HTTPRequest(method: .post, url: URL(string: "\(origin.baseURL)/v1/chat/completions")!),
                                            body: Data("{}".utf8), endpoint: "chat")
        }
        #expect(try await harness.gate.quota.status(bucket: "tokens").isExhausted)
        #expect(try await !harness.gate.quota.status(bucket: "requests").isExhausted, "499 requests are left, as the answer says")
        let models = try await harness.gate.send(HTTPRequest(url: URL(string: "\(origin.baseURL)/v1/models")!), endpoint: "models")
        #expect(models.status.code == 200)
        await #expect(throws: TollgateError.self, "chat is still charged in the spent tokens bucket") {
            _ = try await harness.gate.send(HTTPRequest(method: .post, url: URL(string: "\(origin.baseURL)/v1/chat/completions")!),
                                            body: Data("{}".utf8), endpoint: "chat")
        }
        #expect(origin.requests.count == 2, "the chat after the 429 is refused without a request; the models list is sent")
    }
}

@Suite("Retry policy: a stored answer instead of retrying, when the policy says so")
struct StaleInsteadOfRetryingTests {
    @Test("a 503 is answered at once from the store with servesStaleInsteadOfRetrying, after the retries without it",
          arguments: [true, false])
    func staleInsteadOfRetrying(prefersStale: Bool) async throws {
        let failing = Mutex(false)
        let origin = try ScriptedHTTPServer { _ in
            failing.withLock { $0 }
                ? .init(status: 503, body: "down")
                : .init(headers: [("ETag", "\"v\""), ("Cache-Control", "max-age=0")], body: "stored")
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(.asyncHTTPClient) { $0.retry.servesStaleInsteadOfRetrying = prefersStale }
        let request = HTTPRequest(url: URL(string: "\(origin.baseURL)/youtube/v3/videos?id=1")!)
        _ = try await harness.gate.send(request, endpoint: "videos.list")
        failing.withLock { $0 = true }
        let answer = try await harness.gate.send(request, endpoint: "videos.list")
        #expect(answer.source == .stale(.upstreamFailure))
        #expect(answer.body == Data("stored".utf8))
        #expect(answer.attempts == (prefersStale ? 1 : 4))
        #expect(origin.requests.count == (prefersStale ? 2 : 5))
    }
}

@Suite("A GET with a body is never answered from the cache nor stored")
struct GetWithBodyTests {
    @Test("two GETs to one URL with different bodies get their own answers; nothing is stored")
    func bodiesAreNotCachedUnderTheURL() async throws {
        let origin = try ScriptedHTTPServer { request in
            .init(headers: [("ETag", "\"e\""), ("Cache-Control", "max-age=600")],
                  body: "searched \(String(decoding: request.body, as: UTF8.self))")
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(.asyncHTTPClient)
        let search = HTTPRequest(url: URL(string: "\(origin.baseURL)/index/_search")!)
        let first = try await harness.gate.send(search, body: Data("q=a".utf8), endpoint: "search")
        let second = try await harness.gate.send(search, body: Data("q=b".utf8), endpoint: "search")
        #expect(String(decoding: first.body, as: UTF8.self) == "searched q=a")
        #expect(String(decoding: second.body, as: UTF8.self) == "searched q=b")
        #expect(second.source == .network)
        #expect(try await harness.store.cacheTotals().entries == 0)
    }
}

