import Foundation
import Testing
import TollgateTestSupport

@Suite("tollgate proxy passes compressed answers through for curl and Python")
struct ProxyCompressionTests {
    static let json = #"{"items":["compressed answer"]}"# + "\n"
    /// `json` twenty times, gzip-compressed (made by Python's gzip with mtime 0).
    static let gzipBase64 = "H4sIAAAAAAACA6tWyixJzS1WsopWSs7PLShKLS5OTVFIzCsuTy1Siq3lqh6VH5WnoTwAhbwt94ACAAA="

    @Test("curl --compressed, Python urllib and requests get the upstream's bytes, and the second request is a 304 upstream")
    func compressedRoundTrip() async throws {
        guard CommandRunner.isInstalled("curl"), CommandRunner.isInstalled("python3") else {
            Issue.record("curl and python3 are needed: .ci/run installs curl; python3 is on this kind of machine")
            return
        }
        let gzip = try #require(Data(base64Encoded: Self.gzipBase64))
        let upstream = try ScriptedHTTPServer { request in
            let wantsGzip = request.header("Accept-Encoding")?.contains("gzip") == true
            let etag = wantsGzip ? "\"gz\"" : "\"id\""
            if request.header("If-None-Match") == etag {
                return .init(status: 304, headers: [("ETag", etag), ("Vary", "Accept-Encoding")])
            }
            return .init(headers: [("Content-Type", "application/json"), ("ETag", etag), ("Vary", "Accept-Encoding")]
                            + (wantsGzip ? [("Content-Encoding", "gzip")] : []),
                         body: wantsGzip ? gzip : Data(String(repeating: Self.json, count: 20).utf8))
        }
        defer { upstream.stop() }
        let fixture = try AdminFixture()
        let proxy = try BackgroundCommand(CommandRunner.tollgate, [
            "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream.baseURL, "--db", fixture.path,
        ])
        let banner = try #require(proxy.firstLine(), "the proxy exited before listening")
        let base = String(try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }))
        let url = "\(base)/youtube/v3/videos?id=1&part=snippet"

        let first = try await offPool { try CurlResponse.fetch(url, ["--compressed"]) }
        #expect(first.status == 200)
        #expect(first.headers["content-encoding"] == "gzip")
        #expect(first.body == String(repeating: Self.json, count: 20), "curl decoded the upstream's own gzip bytes")
        let second = try await offPool { try CurlResponse.fetch(url, ["--compressed"]) }
        #expect(second.headers["x-tollgate-source"] == "revalidated")
        #expect(second.body == first.body)
        #expect(upstream.requests.last?.header("If-None-Match") == "\"gz\"")

        let script = """
            import base64, json, sys, urllib.request, requests
            url, expected = sys.argv[1], base64.b64decode(sys.argv[2])
            raw = urllib.request.urlopen(urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})).read()
            assert raw == expected, "urllib got other bytes"
            answer = requests.get(url, headers={"Accept-Encoding": "gzip"})
            assert answer.headers["Content-Encoding"] == "gzip"
            assert json.loads(answer.text.splitlines()[0])["items"] == ["compressed answer"]
            plain = urllib.request.urlopen(url).read().decode()
            assert plain.startswith('{"items"'), plain
            print("ok", answer.headers["X-Tollgate-Source"])
            """
        let python = try await offPool {
            try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, url, Self.gzipBase64])
        }
        #expect(python.status == 0, "\(python.stderr)")
        #expect(python.stdout.hasPrefix("ok revalidated"), "\(python.stdout)")
        let (status, stderr) = proxy.interrupt()
        #expect(status == 0, "\(stderr)")
    }
}
