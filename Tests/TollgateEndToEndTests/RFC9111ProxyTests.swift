import Foundation
import HTTPTypes
import Synchronization
import Testing
import Tollgate
import TollgateProxy
import TollgateTestSupport

extension ProxyUnderTest {
    /// Sends any request through the proxy, bytes as written.
    func send(_ method: String, _ target: String, headers: [String] = [], body: Data = Data()) async throws -> RawHTTPClient.Answer {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for header in headers { text += header + "\r\n" }
        if !body.isEmpty { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        let (port, head) = (self.port, text)
        return try await offCooperativePool { try RawHTTPClient.exchange(port: port, head, body: body) }
    }
}

@Suite("RFC 9111 through tollgate's proxy")
struct RFC9111ProxyTests {
    @Test("§4.2 and §4.2.3: a fresh answer is served by the proxy without a request, with its Age and its Date")
    func freshWithAge() async throws {
        // Five seconds before the gate's own (simulated) clock.
        let date = GateHarness.start.addingTimeInterval(-5)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let dateText = formatter.string(from: date)
        let origin = try ScriptedHTTPServer { _ in
            .init(headers: [("Cache-Control", "max-age=600"), ("Date", dateText), ("Age", "30")], body: "fresh")
        }
        defer { origin.stop() }
        let harness = try await ProxyUnderTest(upstream: origin.baseURL)
        let first = try await harness.send("GET", "/youtube/v3/videos?id=1")
        #expect(first.headers["date"] == dateText, "the upstream's Date, not the proxy's clock")
        #expect(first.headers["x-tollgate-upstream-date"] == nil)
        let second = try await harness.send("GET", "/youtube/v3/videos?id=1")
        #expect(second.headers["x-tollgate-source"] == "cache")
        #expect(second.headers["date"] == dateText, "the stored Date")
        #expect((second.headers["age"].flatMap(Int.init) ?? 0) >= 30)
        #expect(String(decoding: second.body, as: UTF8.self) == "fresh")
        #expect(origin.requests.count == 1)
        await harness.proxy.stop()
    }

    @Test("§4.2.4: a must-revalidate answer is not served stale when the origin is down: the client gets a 502")
    func mustRevalidateThroughTheProxy() async throws {
        let down = Mutex(false)
        let origin = try ScriptedHTTPServer { _ in
            down.withLock { $0 } ? .init(status: 0)
                : .init(headers: [("ETag", "\"m\""), ("Cache-Control", "max-age=0, must-revalidate")], body: "strict")
        }
        defer { origin.stop() }
        let harness = try await ProxyUnderTest(upstream: origin.baseURL)
        _ = try await harness.send("GET", "/youtube/v3/videos?id=1")
        down.withLock { $0 = true }
        let answer = try await harness.send("GET", "/youtube/v3/videos?id=1")
        #expect(answer.status == 502)
        #expect(answer.headers["x-tollgate-source"] == "refused")
        await harness.proxy.stop()
    }

    @Test("§5.2.1.7: only-if-cached with nothing stored is a 504, and nothing is sent")
    func onlyIfCached() async throws {
        let origin = try ScriptedHTTPServer { _ in .init(body: "never") }
        defer { origin.stop() }
        let harness = try await ProxyUnderTest(upstream: origin.baseURL)
        let answer = try await harness.send("GET", "/youtube/v3/videos?id=9", headers: ["Cache-Control: only-if-cached"])
        #expect(answer.status == 504)
        #expect(origin.requests.isEmpty)
        await harness.proxy.stop()
    }

    @Test("§4.4: a successful POST through the proxy invalidates the stored answer of its URL")
    func unsafeMethodInvalidates() async throws {
        let origin = try ScriptedHTTPServer { request in
            request.method == "POST" ? .init(status: 201, body: "created")
                : .init(headers: [("Cache-Control", "max-age=600")], body: "list \(Int.random(in: 0...1_000_000))")
        }
        defer { origin.stop() }
        let harness = try await ProxyUnderTest(upstream: origin.baseURL)
        let first = try await harness.send("GET", "/v1/items")
        #expect(try await harness.send("GET", "/v1/items").headers["x-tollgate-source"] == "cache")
        let created = try await harness.send("POST", "/v1/items", headers: ["Content-Type: text/plain"], body: Data("x".utf8))
        #expect(created.status == 201)
        let after = try await harness.send("GET", "/v1/items")
        #expect(after.headers["x-tollgate-source"] == "network", "the POST invalidated what was stored")
        #expect(after.body != first.body)
        await harness.proxy.stop()
    }
}
