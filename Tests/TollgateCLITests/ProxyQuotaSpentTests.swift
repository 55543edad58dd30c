import Foundation
import Testing
import TollgateTestSupport

/// The API's own "quota spent" answer through `tollgate proxy`: the client reads the API's error,
/// as its SDK expects (PyGithub's `RateLimitExceededException`, the openai SDK's error code), and
/// the bucket is spent for the requests that follow, which the proxy refuses without sending.
@Suite("tollgate proxy and the API's own quota-spent answer")
struct ProxyQuotaSpentTests {
    @Test("Google's 403 quotaExceeded reaches curl as Google wrote it, gzipped too; the next search is refused before it is sent",
          arguments: [false, true])
    func serverAnswerPassesThrough(gzips: Bool) async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let harness = try await ProxyHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            // As Google does for a client that asks (curl --compressed, every Google client library).
            harness.api.updateBehaviour { $0.searchCallsPerDay = 1; $0.gzipsWhenAsked = gzips }
            let compressed = gzips ? ["--compressed"] : []
            let base = "\(harness.baseURL)/youtube/v3/search?part=snippet&q="
            let first = try await offPool { try CurlResponse.fetch(base + "first", compressed) }
            #expect(first.status == 200)

            let spent = try await offPool { try CurlResponse.fetch(base + "second", compressed) }
            #expect(spent.headers["content-encoding"] == (gzips ? "gzip" : nil), "passed as the API sent it")
            #expect(spent.status == 403)
            #expect(spent.body.contains("\"reason\":\"quotaExceeded\""), "\(spent.body)")
            #expect(spent.headers["x-tollgate-source"] == "network")
            #expect(spent.headers["x-tollgate-units"] == "1", "a search is one call of the day's searches")

            let refused = try await offPool { try CurlResponse.fetch(base + "third", compressed) }
            #expect(refused.status == 429)
            #expect(refused.headers["x-tollgate-source"] == "refused")
            #expect(refused.headers["retry-after"] != nil)
            #expect(harness.api.receivedRequests.map(\.status) == [200, 403], "the third never reached the API")
        }
    }
}
