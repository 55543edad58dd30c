import Foundation
import HTTPTypes
import Synchronization
import Testing
import Tollgate
import TollgateProxy
import TollgateTestSupport

/// A client's own conditional request through `tollgate proxy` (RFC 9111 §4.3.2): answered from
/// what the gate holds when it holds something — fresh, revalidated with the gate's own validator,
/// or stale when the quota is spent — and sent upstream as it is only when nothing is stored.
/// Found from outside: a client cache (requests-cache) revalidating through the proxy was charged
/// for what the proxy held fresh, and refused when the quota was spent.
@Suite("The proxy answers a client's own conditional from what it holds")
struct ProxyClientConditionalTests {
    /// An upstream with one resource, `/videos`: a 200 with a tag, a date and the freshness asked
    /// for, a 304 to its own tag, or Google's "quota spent" once `spent` is set.
    final class Upstream: Sendable {
        /// Set once the API's quota is to be spent.
        final class Switch: Sendable {
            let isOn = Mutex(false)
        }

        let server: ScriptedHTTPServer
        let spent = Switch()

        init(cacheControl: String) throws {
            let spent = self.spent
            server = try ScriptedHTTPServer { request in
                if spent.isOn.withLock({ $0 }) {
                    return .init(status: 403, headers: [("Content-Type", "application/json")],
                                 body: #"{"error":{"code":403,"errors":[{"reason":"quotaExceeded","domain":"youtube.quota"}]}}"#)
                }
                let validators: [(name: String, value: String)] = [
                    ("ETag", "\"v1\""), ("Last-Modified", "Tue, 01 Sep 2026 10:00:00 GMT"), ("Cache-Control", cacheControl),
                ]
                if let condition = request.header("If-None-Match") {
                    return condition == "\"v1\"" ? .init(status: 304, headers: validators)
                        : .init(headers: validators + [("Content-Type", "application/json")], body: #"{"items":[1]}"#)
                }
                return .init(headers: validators + [("Content-Type", "application/json")], body: #"{"items":[1]}"#)
            }
        }

        var requests: [ScriptedHTTPServer.Request] { server.requests }
    }

    static func send(_ proxy: GateProxy, headers: [String] = []) async throws -> RawHTTPClient.Answer {
        var text = "GET /youtube/v3/videos?part=id&id=a HTTP/1.1\r\nHost: 127.0.0.1:\(proxy.address.port)\r\nConnection: close\r\n"
        for header in headers { text += header + "\r\n" }
        let (port, head) = (proxy.address.port, text + "\r\n")
        return try await offCooperativePool { try RawHTTPClient.exchange(port: port, head) }
    }

    @Test("held fresh: the client's matching If-None-Match, or an If-Modified-Since at or after Last-Modified, gets a 304 with nothing sent or charged; another tag gets the whole answer")
    func freshIsAnsweredHere() async throws {
        let upstream = try Upstream(cacheControl: "max-age=600")
        defer { upstream.server.stop() }
        let proxied = try await ProxiedGate.start(in: upstream.server)
        let proxy = proxied.proxy
        let first = try await Self.send(proxy)
        #expect(first.status == 200)
        let charged = try await proxied.gate.quota.remaining()

        let matching = try await Self.send(proxy, headers: ["If-None-Match: \"v1\""])
        #expect(matching.status == 304)
        #expect(matching.headers["x-tollgate-source"] == "cache")
        #expect(matching.headers["x-tollgate-units"] == "0")
        let since = try await Self.send(proxy, headers: ["If-Modified-Since: Tue, 01 Sep 2026 10:00:00 GMT"])
        #expect(since.status == 304)
        let earlier = try await Self.send(proxy, headers: ["If-Modified-Since: Mon, 31 Aug 2026 10:00:00 GMT"])
        #expect(earlier.status == 200, "modified since that date: the whole answer")
        let other = try await Self.send(proxy, headers: ["If-None-Match: \"v0\""])
        #expect(other.status == 200)
        #expect(String(decoding: other.body, as: UTF8.self) == #"{"items":[1]}"#)
        #expect(upstream.requests.count == 1, "every one answered from the fresh copy")
        #expect(try await proxied.gate.quota.remaining() == charged)
        await proxied.stop()
    }

    @Test("held stale and the quota spent: the client's conditional is answered from the stale copy, as a request without it is, not refused")
    func staleWhenSpent() async throws {
        let upstream = try Upstream(cacheControl: "max-age=0")
        defer { upstream.server.stop() }
        let proxied = try await ProxiedGate.start(in: upstream.server)
        let proxy = proxied.proxy
        #expect(try await Self.send(proxy).status == 200)
        upstream.spent.isOn.withLock { $0 = true }
        let plain = try await Self.send(proxy)
        #expect(plain.status == 200)
        #expect(plain.headers["x-tollgate-source"] == "stale (quotaExhausted)")

        let conditional = try await Self.send(proxy, headers: ["If-None-Match: \"v1\""])
        #expect(conditional.status == 304, "\(conditional.status) \(conditional.headers)")
        #expect(conditional.headers["x-tollgate-source"] == "stale (quotaExhausted)")
        #expect(upstream.requests.count == 2, "the spent bucket sends nothing more")
        await proxied.stop()
    }

    @Test("held stale: revalidated upstream with the gate's own tag, then the client's 304; nothing held: the client's conditional goes as it is")
    func revalidatedOrForwarded() async throws {
        let upstream = try Upstream(cacheControl: "max-age=0")
        defer { upstream.server.stop() }
        let proxied = try await ProxiedGate.start(in: upstream.server)
        let proxy = proxied.proxy
        // Nothing held yet: the client's own tag goes upstream, whose 304 costs what the API says.
        let forwarded = try await Self.send(proxy, headers: ["If-None-Match: \"v1\""])
        #expect(forwarded.status == 304)
        #expect(upstream.requests.last?.header("If-None-Match") == "\"v1\"")

        #expect(try await Self.send(proxy).status == 200)
        let revalidated = try await Self.send(proxy, headers: ["If-None-Match: W/\"v1\""])
        #expect(revalidated.status == 304)
        #expect(revalidated.headers["x-tollgate-source"] == "revalidated")
        #expect(upstream.requests.last?.header("If-None-Match") == "\"v1\"", "the gate's own validator, not the client's")
        #expect(upstream.requests.count == 3)
        await proxied.stop()
    }
}
