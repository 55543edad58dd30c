import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateProxy
import TollgateTestSupport

@Suite("The proxy passes bytes and header fields through unchanged")
struct ProxyFidelityTests {
    /// 20 lines of JSON, gzip-compressed: 59 bytes that only a client that asked for gzip can read.
    static let gzipBody = Data(base64Encoded: "H4sIAAAAAAACA6tWyixJzS1WsopWSs7PLShKLS5OTVFIzCsuTy1Siq3lqh6VH5WnoTwAhbwt94ACAAA=")!

    @Test("a gzip answer reaches the client byte for byte with its Content-Encoding, and is revalidated with a 304")
    func compressedAnswerRoundTrips() async throws {
        let upstream = try ScriptedHTTPServer { request in
            let wantsGzip = request.header("Accept-Encoding")?.contains("gzip") == true
            if request.header("If-None-Match") == (wantsGzip ? "\"gz\"" : "\"id\"") {
                return .init(status: 304, headers: [("ETag", wantsGzip ? "\"gz\"" : "\"id\""), ("Vary", "Accept-Encoding")])
            }
            return wantsGzip
                ? .init(headers: [("Content-Encoding", "gzip"), ("Content-Type", "application/json"), ("ETag", "\"gz\""),
                                  ("Vary", "Accept-Encoding")], body: Self.gzipBody)
                : .init(headers: [("Content-Type", "application/json"), ("ETag", "\"id\""), ("Vary", "Accept-Encoding")],
                        body: "identity answer\n")
        }
        defer { upstream.stop() }
        let harness = try await ProxyUnderTest(upstream: upstream.baseURL)

        let first = try await harness.get("/youtube/v3/videos?id=1", headers: ["Accept-Encoding: gzip"])
        #expect(first.status == 200)
        #expect(first.headers["content-encoding"] == "gzip")
        #expect(first.body == Self.gzipBody)
        #expect(upstream.requests.last?.header("Accept-Encoding") == "gzip", "the client's Accept-Encoding goes upstream")
        #expect(upstream.requests.last?.header("Accept-Language") == nil, "nothing added on the way")

        let plain = try await harness.get("/youtube/v3/videos?id=1")
        #expect(plain.body == Data("identity answer\n".utf8), "a client without gzip gets its own variant")
        #expect(plain.headers["content-encoding"] == nil)

        let second = try await harness.get("/youtube/v3/videos?id=1", headers: ["Accept-Encoding: gzip"])
        #expect(second.headers["x-tollgate-source"] == "revalidated")
        #expect(second.body == Self.gzipBody)
        #expect(upstream.requests.last?.header("If-None-Match") == "\"gz\"")
        await harness.proxy.stop()
    }

    @Test("an unknown Content-Encoding passes through instead of becoming a 502")
    func unknownContentEncoding() async throws {
        let upstream = try ScriptedHTTPServer { _ in
            .init(headers: [("Content-Encoding", "zstd-experimental")], body: Data([0x28, 0xB5, 0x2F, 0xFD, 0x00]))
        }
        defer { upstream.stop() }
        let harness = try await ProxyUnderTest(upstream: upstream.baseURL)
        let answer = try await harness.get("/youtube/v3/videos?id=1", headers: ["Accept-Encoding: zstd-experimental"])
        #expect(answer.status == 200)
        #expect(answer.headers["content-encoding"] == "zstd-experimental")
        #expect(answer.body == Data([0x28, 0xB5, 0x2F, 0xFD, 0x00]))
        await harness.proxy.stop()
    }
}
