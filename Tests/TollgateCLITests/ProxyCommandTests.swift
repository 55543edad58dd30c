import Foundation
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

/// `tollgate proxy` in a process of its own, in front of a fake YouTube API, driven by real curl.
struct ProxyHarness {
    let fixture: AdminFixture
    let api: FakeYouTubeAPI
    let proxy: BackgroundCommand
    let baseURL: String

    init() async throws {
        fixture = try AdminFixture()
        api = try await FakeYouTubeAPI.start()
        proxy = try BackgroundCommand(CommandRunner.tollgate, [
            "proxy", "--listen", "127.0.0.1:0", "--upstream", api.baseURL.absoluteString, "--db", fixture.path,
        ])
        let banner = try #require(proxy.firstLine(), "the proxy exited before listening")
        let address = try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") })
        baseURL = String(address)
    }

    func video(_ id: String) -> String { "\(baseURL)/youtube/v3/videos?id=\(id)&part=snippet" }

    /// Stops the proxy with Ctrl-C and the fake API; the proxy must exit cleanly.
    func stop() async {
        let (status, stderr) = proxy.interrupt()
        #expect(status == 0, "proxy exit \(status): \(stderr)")
        await api.stop()
    }
}

@Suite("tollgate proxy")
struct ProxyCommandTests {
    @Test("curl through the proxy: a second identical request is a 304 upstream at YouTube's 1 unit, served from the stored body")
    func revalidation() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let harness = try await ProxyHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in

            let url = harness.video("v1")
            let first = try await offPool { try CurlResponse.fetch(url, [
                "-H", "Connection: keep-alive, X-Hop-Secret", "-H", "X-Hop-Secret: 1", "-H", "Keep-Alive: timeout=5",
                "-H", "X-Forward-Me: yes",
            ]) }
            #expect(first.status == 200)
            #expect(first.headers["x-tollgate-source"] == "network")
            #expect(first.headers["x-tollgate-units"] == "1")
            #expect(first.headers["x-tollgate-endpoint"] == "videos.list")
            #expect(first.body.contains(#"videos?id=v1&part=snippet (revision 1)"#))

            let second = try await offPool { try CurlResponse.fetch(url) }
            #expect(second.status == 200)
            #expect(second.headers["x-tollgate-source"] == "revalidated")
            #expect(second.headers["x-tollgate-units"] == "1")
            #expect(second.body == first.body)
            #expect(second.headers["etag"] == first.headers["etag"])

            let received = harness.api.receivedRequests
            #expect(received.map(\.status) == [200, 304])
            #expect(received.last?.ifNoneMatch == first.headers["etag"])
            // Hop-by-hop fields, and those Connection names, stop at the proxy; the others pass.
            #expect(received.first?.headers["x-hop-secret"] == nil)
            #expect(received.first?.headers["keep-alive"] == nil)
            #expect(received.first?.headers["x-forward-me"] == "yes")
            #expect(try harness.fixture.value("SELECT units, calls FROM quota_today WHERE endpoint = 'videos.list'") == "2|2")
        }
    }

    @Test("a spent quota answers 429 with Retry-After until the Pacific reset; an open circuit answers 503 with Retry-After")
    func refusals() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let harness = try await ProxyHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            #expect(try harness.fixture.tollgate("quota", "set-limit", "youtube", "1").status == 0)

            let (v1, v2, v3) = (harness.video("v1"), harness.video("v2"), harness.video("v3"))
            #expect(try await offPool { try CurlResponse.fetch(v1) }.status == 200)
            let spent = try await offPool { try CurlResponse.fetch(v2) }
            #expect(spent.status == 429)
            let untilReset = PacificDay(containing: Date()).nextReset.timeIntervalSinceNow
            let retryAfter = try #require(Int(spent.headers["retry-after"] ?? ""))
            #expect(abs(Double(retryAfter) - untilReset) < 5, "Retry-After \(retryAfter), reset in \(untilReset)")
            #expect(spent.headers["x-tollgate-source"] == "refused")
            let refusal = try JSONSerialization.jsonObject(with: Data(spent.body.utf8)) as? [String: Any]
            let detail = refusal?["error"] as? [String: Any]
            #expect(detail?["code"] as? String == "quota_exceeded", "\(spent.body)")
            #expect(detail?["type"] as? String == "tollgate")
            #expect((detail?["message"] as? String)?.contains("Daily API quota exceeded") == true)
            #expect(refusal?["message"] as? String == detail?["message"] as? String, "GitHub's clients read it at the top")
            #expect(spent.body.contains("Daily API quota exceeded"))

            #expect(try harness.fixture.tollgate("circuit", "open", "videos.list", "--for", "120").status == 0)
            let open = try await offPool { try CurlResponse.fetch(v3) }
            #expect(open.status == 503)
            let wait = try #require(Int(open.headers["retry-after"] ?? ""))
            #expect((110...120).contains(wait))
            #expect(open.body.contains("\"code\":\"circuit_open\""))

            // Only the first request reached the API.
            #expect(harness.api.receivedRequests.count == 1)
        }
    }

    @Test("a listen address that is not loopback, or a bad upstream, is refused before anything starts",
          arguments: [
              (["--listen", "0.0.0.0:8080", "--upstream", "http://127.0.0.1:9"], "0.0.0.0 is not a loopback address"),
              (["--listen", "192.168.1.20:8080", "--upstream", "http://127.0.0.1:9"], "is not a loopback address"),
              (["--listen", "example.com:80", "--upstream", "http://127.0.0.1:9"], "is not a loopback address"),
              (["--listen", "127.0.0.1", "--upstream", "http://127.0.0.1:9"], "write it as HOST:PORT"),
              (["--listen", "127.0.0.1:99999", "--upstream", "http://127.0.0.1:9"], "the port must be between 0 and 65535"),
              (["--listen", "127.0.0.1:0", "--upstream", "ftp://example.com"], "is not an absolute http(s) URL"),
              (["--listen", "127.0.0.1:0"], "Missing --upstream: the API's base URL (or an --api description that names one)."),
          ])
    func refusesBadArguments(arguments: [String], message: String) throws {
        let result = try CommandRunner.run(CommandRunner.tollgate, ["proxy"] + arguments)
        #expect(result.status != 0)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
