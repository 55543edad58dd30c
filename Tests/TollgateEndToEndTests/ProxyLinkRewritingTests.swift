import Foundation
import HTTPTypes
import Synchronization
import Testing
import Tollgate
@testable import TollgateFakeAPI
import TollgateProxy
import TollgateTestSupport

/// Issue 43 over real loopback HTTP: a proxy in this process in front of a scripted upstream whose
/// answers name their own origin, read by a raw client that chooses the `Host` it sends.
@Suite("The proxy points links to the upstream back at itself, as each client addressed it")
struct ProxyLinkRewritingTests {
    /// Sends a request with the `Host` given and reads the answer.
    static func send(
        _ proxy: GateProxy, _ target: String, host: String, method: String = "GET", headers: [String] = []
    ) async throws -> RawHTTPClient.Answer {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n"
        for header in headers { text += header + "\r\n" }
        if method == "POST" { text += "Content-Length: 0\r\n" }
        text += "\r\n"
        let (port, head) = (proxy.address.port, text)
        return try await offCooperativePool { try RawHTTPClient.exchange(port: port, head) }
    }

    static func text(_ answer: RawHTTPClient.Answer) -> String { String(decoding: answer.body, as: UTF8.self) }

    /// An upstream whose JSON and `Link` name its own origin, as GitHub's do, with a link and a URL
    /// to another origin beside them.
    static func upstream() throws -> ScriptedHTTPServer {
        let origin = Mutex<String>("")
        let server = try ScriptedHTTPServer { request in
            let base = origin.withLock { $0 }
            let path = request.target.split(separator: "?").first.map(String.init) ?? ""
            switch path {
            case "/items":
                let validators: [(name: String, value: String)] = [("ETag", "\"v1\""), ("Cache-Control", "no-cache")]
                if request.header("If-None-Match") == "\"v1\"" { return .init(status: 304, headers: validators) }
                return .init(headers: validators + [
                    ("Content-Type", "application/json; charset=utf-8"),
                    ("Link", "<\(base)/items?page=2>; rel=\"next\", <https://other.example/items?page=2>; rel=\"help\""),
                ], body: #"{"url":"\#(base)/items/1","html_url":"https://other.example/items/1"}"#)
            case "/notes":
                return .init(headers: [("Content-Type", "text/plain"), ("Cache-Control", "no-store")],
                             body: "see \(base)/items/1")
            case "/compressed":
                return .init(headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip"), ("Cache-Control", "no-store")],
                             body: ProxyLinkRewritingTests.gzipped(base))
            case "/gzipped-items":
                // A strong tag, ranges and a digest, all of the gzip bytes; If-None-Match compared
                // weakly, If-Match strongly (RFC 9110 §13.1.1).
                let validators: [(name: String, value: String)] = [("ETag", "\"g1\""), ("Cache-Control", "no-cache")]
                if request.method == "PATCH" {
                    return request.header("If-Match") == "\"g1\""
                        ? .init(headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: "{}")
                        : .init(status: 412, body: "")
                }
                if let condition = request.header("If-None-Match"), ["\"g1\"", "W/\"g1\""].contains(condition) {
                    return .init(status: 304, headers: validators)
                }
                return .init(headers: validators + [
                    ("Content-Type", "application/json"), ("Content-Encoding", "gzip"), ("Accept-Ranges", "bytes"),
                    ("Content-Language", "en"), ("Content-MD5", "Q2hlY2sgSW50ZWdyaXR5IQ=="),
                ], body: GzipEncoding.gzipped(Data(#"{"url":"\#(base)/items/1"}"#.utf8)))
            case "/chunked":
                // A HEAD of a resource sent chunked: no length, as a GET's would have none.
                return .init(headers: [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked"),
                                       ("Cache-Control", "no-store")])
            case "/created":
                return .init(status: 201, headers: [("Location", "\(base)/items/9"), ("Content-Location", "\(base)/items/9"),
                                                    ("Content-Type", "application/json")],
                             body: #"{"url":"\#(base)/items/9"}"#)
            default:
                return .init(status: 404, body: "")
            }
        }
        origin.withLock { $0 = server.baseURL }
        return server
    }

    /// Not really gzip, but bytes that hold a JSON string naming the upstream and must pass as they are.
    static func gzipped(_ base: String) -> Data { Data([0x1f, 0x8b, 0x08, 0x00]) + Data(#""\#(base)/x""#.utf8) }

    @Test("one stored answer, served to a client that came as localhost and then as 127.0.0.1, names each one's own origin; other origins stay")
    func eachClientItsOwnOrigin() async throws {
        let upstream = try Self.upstream()
        defer { upstream.stop() }
        let proxied = try await ProxiedGate.start(in: upstream, rewriting: ["application/json"])
        let proxy = proxied.proxy
        let port = proxy.address.port
        let local = "localhost:\(port)"
        let numeric = "127.0.0.1:\(port)"

        let first = try await Self.send(proxy, "/items", host: local)
        #expect(first.status == 200)
        #expect(first.headers["x-tollgate-source"] == "network")
        #expect(first.headers["link"] == "<http://\(local)/items?page=2>; rel=\"next\", <https://other.example/items?page=2>; rel=\"help\"")
        #expect(Self.text(first) == #"{"url":"http://\#(local)/items/1","html_url":"https://other.example/items/1"}"#)
        #expect(first.headers["content-length"] == String(first.body.count), "the rewritten body's length")
        #expect(first.headers["etag"] == "W/\"v1\"", "the upstream's tag made weak: these are not the upstream's bytes")

        let second = try await Self.send(proxy, "/items", host: numeric)
        #expect(["cache", "revalidated"].contains(second.headers["x-tollgate-source"] ?? ""), "served from the store")
        #expect(second.headers["link"] == "<http://\(numeric)/items?page=2>; rel=\"next\", <https://other.example/items?page=2>; rel=\"help\"")
        #expect(Self.text(second) == #"{"url":"http://\#(numeric)/items/1","html_url":"https://other.example/items/1"}"#)
        let third = try await Self.send(proxy, "/items", host: local)
        #expect(Self.text(third) == Self.text(first), "the store kept the upstream's bytes, not the last client's")

        // The client's own conditional, with the tag it was given: a 304, whose links are its own too.
        let notModified = try await Self.send(proxy, "/items", host: local, headers: ["If-None-Match: W/\"v1\""])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)
        #expect(notModified.headers["etag"] == "W/\"v1\"", "the tag the 200 carried")

        // Following the rewritten link comes back through the gate.
        let before = upstream.requests.count
        let next = try await Self.send(proxy, "/items?page=2", host: local)
        #expect(next.headers["x-tollgate-source"] == "network")
        #expect(upstream.requests.count == before + 1)
        #expect(upstream.requests.last?.target == "/items?page=2")
        await proxied.stop()
    }

    @Test("a gzip JSON answer with a strong tag goes out decoded under the tag made weak; the client's conditional with it earns a 304 that names no coding, type or digest of the upstream's bytes")
    func compressedThenNotModified() async throws {
        let upstream = try Self.upstream()
        defer { upstream.stop() }
        let proxied = try await ProxiedGate.start(in: upstream, rewriting: ["application/json"])
        let proxy = proxied.proxy
        let host = "127.0.0.1:\(proxy.address.port)"

        let first = try await Self.send(proxy, "/gzipped-items", host: host, headers: ["Accept-Encoding: gzip"])
        #expect(first.status == 200)
        #expect(Self.text(first) == #"{"url":"http://\#(host)/items/1"}"#, "decoded, its link rewritten")
        #expect(first.headers["content-encoding"] == nil)
        #expect(first.headers["etag"] == "W/\"g1\"")
        #expect(first.headers["accept-ranges"] == nil, "ranges of the upstream's bytes are not ranges of these")
        #expect(first.headers["content-md5"] == nil)

        // The client's conditional, answered from what the gate holds (no-cache: revalidated with the
        // gate's own tag), then judged against the client's: a 304.
        let notModified = try await Self.send(proxy, "/gzipped-items", host: host,
                                              headers: ["Accept-Encoding: gzip", "If-None-Match: \(first.headers["etag"] ?? "")"])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)
        #expect(notModified.headers["etag"] == "W/\"g1\"", "the tag its 200 carried")
        #expect(notModified.headers["cache-control"] == "no-cache")
        for name in ["content-encoding", "content-type", "content-language", "content-md5", "accept-ranges"] {
            #expect(notModified.headers[name] == nil, "a 304 describes no body (RFC 9110 §15.4.5): \(name)")
        }
        #expect(upstream.requests.last?.header("If-None-Match") == "\"g1\"", "the gate revalidates what it holds with its own tag")

        // The tag it was given, in an If-Match: the upstream compares strongly, against its own tag.
        let patched = try await Self.send(proxy, "/gzipped-items", host: host, method: "PATCH",
                                          headers: ["If-Match: W/\"g1\"", "Content-Length: 0"])
        #expect(patched.status == 200, "not 412: the upstream got its own tag back")
        #expect(upstream.requests.last?.header("If-Match") == "\"g1\"")
        await proxied.stop()
    }

    @Test("a HEAD of a resource whose GET is chunked says so, with no Content-Length: 0")
    func headOfChunked() async throws {
        let upstream = try Self.upstream()
        defer { upstream.stop() }
        let proxied = try await ProxiedGate.start(in: upstream)
        let proxy = proxied.proxy
        let head = try await Self.send(proxy, "/chunked", host: "127.0.0.1:\(proxy.address.port)", method: "HEAD")
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == nil)
        #expect(head.headers["transfer-encoding"] == "chunked")
        #expect(head.body.isEmpty)
        await proxied.stop()
    }

    @Test("bodies of unlisted media types, compressed bodies and links elsewhere reach the client byte for byte; Location and Content-Location are rewritten")
    func untouched() async throws {
        let upstream = try Self.upstream()
        defer { upstream.stop() }
        let proxied = try await ProxiedGate.start(in: upstream, rewriting: ["application/json"])
        let proxy = proxied.proxy
        let host = "127.0.0.1:\(proxy.address.port)"
        let notes = try await Self.send(proxy, "/notes", host: host)
        #expect(Self.text(notes) == "see \(upstream.baseURL)/items/1")
        let compressed = try await Self.send(proxy, "/compressed", host: host)
        #expect(compressed.body == Self.gzipped(upstream.baseURL))
        #expect(compressed.headers["content-encoding"] == "gzip")

        let created = try await Self.send(proxy, "/created", host: host, method: "POST")
        #expect(created.status == 201)
        #expect(created.headers["location"] == "http://\(host)/items/9")
        #expect(created.headers["content-location"] == "http://\(host)/items/9")
        #expect(Self.text(created) == #"{"url":"http://\#(host)/items/9"}"#)

        // Without a listed type, the same JSON passes as the upstream sent it; the headers still change.
        let plain = try await GateProxy.start(
            gate: proxied.gate, upstream: URL(string: upstream.baseURL)!, listen: try LoopbackAddress(parsing: "127.0.0.1:0")
        )
        let plainHost = "127.0.0.1:\(plain.address.port)"
        let unlisted = try await Self.send(plain, "/created", host: plainHost, method: "POST")
        #expect(Self.text(unlisted) == #"{"url":"\#(upstream.baseURL)/items/9"}"#)
        #expect(unlisted.headers["location"] == "http://\(plainHost)/items/9")
        await plain.stop()
        await proxied.stop()
    }

    @Test("an upstream under a base path mounted at the proxy's root: the base path comes off, and a URL outside it stays")
    func basePath() async throws {
        let origin = Mutex<String>("")
        let upstream = try ScriptedHTTPServer { request in
            let base = origin.withLock { $0 }
            return .init(headers: [
                ("Content-Type", "application/json"), ("Cache-Control", "no-store"),
                ("Link", "<\(base)/api/v3/items?page=2>; rel=\"next\", </api/v3/items?page=9>; rel=\"last\", <\(base)/login>; rel=\"login\""),
            ], body: #"{"url":"\#(base)/api/v3/items/1","login":"\#(base)/login","seen":"\#(request.target)"}"#)
        }
        origin.withLock { $0 = upstream.baseURL }
        defer { upstream.stop() }
        let gate = try ScriptedGate(.asyncHTTPClient)
        let proxy = try await GateProxy.start(
            gate: gate.gate, upstream: URL(string: "\(upstream.baseURL)/api/v3")!,
            listen: try LoopbackAddress(parsing: "127.0.0.1:0"), rewrittenBodyTypes: ["application/json"]
        )
        let host = "127.0.0.1:\(proxy.address.port)"
        let answer = try await Self.send(proxy, "/items", host: host)
        #expect(answer.headers["link"]
            == "<http://\(host)/items?page=2>; rel=\"next\", </items?page=9>; rel=\"last\", <\(upstream.baseURL)/login>; rel=\"login\"")
        #expect(Self.text(answer) == #"{"url":"http://\#(host)/items/1","login":"\#(upstream.baseURL)/login","seen":"/api/v3/items"}"#)
        let next = try await Self.send(proxy, "/items?page=2", host: host)
        #expect(Self.text(next).contains(#""seen":"/api/v3/items?page=2""#))
        await proxy.stop()
    }
}
