import Foundation
import Testing
import Tollgate
import TollgateStore
import TollgateTestSupport

@Suite("The proxy's RateLimit-Policy and RateLimit fields")
struct RateLimitFieldsTests {
    /// `RateLimit` as policy name → parameters, read as a structured-field list.
    static func parameters(_ field: String?) -> [String: [String: Int]] {
        var policies: [String: [String: Int]] = [:]
        for member in (field ?? "").split(separator: ",") {
            let parts = member.trimmingCharacters(in: .whitespaces).split(separator: ";")
            guard let name = parts.first, name.hasPrefix("\""), name.hasSuffix("\"") else { continue }
            var values: [String: Int] = [:]
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=")
                if pair.count == 2, let value = Int(pair[1]) { values[String(pair[0])] = value }
            }
            policies[String(name.dropFirst().dropLast())] = values
        }
        return policies
    }

    @Test("a 304 of an API that does not charge it leaves r where it was, though its refund is written after the answer")
    func freeNotModifiedLeavesRemaining() async throws {
        let origin = try etagOrigin()
        defer { origin.stop() }
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.quota.setNotModifiedCost(.free)
        try await ProxyWithAdmin.with(upstream: URL(string: origin.baseURL)!, configuration: configuration) { harness in
            let first = try await harness.get("/youtube/v3/videos?id=1")
            #expect(Self.parameters(first.headers["ratelimit"])["youtube"]?["r"] == 9_999)
            let revalidated = try await harness.get("/youtube/v3/videos?id=1")
            #expect(revalidated.headers["x-tollgate-source"] == "revalidated")
            #expect(revalidated.headers["x-tollgate-units"] == "0")
            #expect(Self.parameters(revalidated.headers["ratelimit"])["youtube"]?["r"] == 9_999)
        }
    }

    @Test("a daily policy per bucket and the throttle's window; r falls as units are spent and t is the Pacific reset")
    func remainingFalls() async throws {
        let origin = try etagOrigin()
        defer { origin.stop() }
        try await ProxyWithAdmin.with(upstream: URL(string: origin.baseURL)!) { harness in

            let first = try await harness.get("/youtube/v3/videos?id=1")
            let policy = Self.parameters(first.headers["ratelimit-policy"])
            #expect(policy["youtube"] == ["q": 10_000, "w": 86_400], "\(first.headers)")
            let throttle = GateConfiguration.youTubeDataAPIv3.throttle.limit(for: "videos.list")
            #expect(policy["throttle"] == ["q": throttle.requests, "w": Int(throttle.window.timeInterval)])
            let limits = Self.parameters(first.headers["ratelimit"])
            #expect(limits["youtube"]?["r"] == 9_999)
            let toReset = PacificDay(containing: Date()).nextReset.timeIntervalSinceNow
            #expect(abs(Double(limits["youtube"]?["t"] ?? 0) - toReset) < 5)
            #expect(limits["throttle"]?["r"] == throttle.requests - 1)

            let second = try await harness.get("/youtube/v3/videos?id=2")
            #expect(Self.parameters(second.headers["ratelimit"])["youtube"]?["r"] == 9_998)
            #expect(Self.parameters(second.headers["ratelimit"])["throttle"]?["r"] == throttle.requests - 2)

            // A 304 costs 1 unit on YouTube: r falls by it.
            let revalidated = try await harness.get("/youtube/v3/videos?id=2")
            #expect(revalidated.headers["x-tollgate-source"] == "revalidated")
            #expect(Self.parameters(revalidated.headers["ratelimit"])["youtube"]?["r"] == 9_997)

            // search.list is charged in a bucket of its own.
            let search = try await harness.get("/youtube/v3/search?q=cats")
            #expect(Self.parameters(search.headers["ratelimit"])["youtube.search"]?["r"] == 99)
            #expect(Self.parameters(search.headers["ratelimit"])["youtube"] == nil)
        }
    }

    @Test("not on an answer from the cache with a positive Age")
    func notOnCachedAnswers() async throws {
        let origin = try etagOrigin(extraHeaders: [("Cache-Control", "max-age=600")])
        defer { origin.stop() }
        try await ProxyWithAdmin.with(upstream: URL(string: origin.baseURL)!) { harness in

            let fetched = try await harness.get("/youtube/v3/videos?id=9")
            #expect(fetched.headers["x-tollgate-source"] == "network")
            #expect(fetched.headers["ratelimit"] != nil)
            try await Task.sleep(for: .milliseconds(1100))
            let cached = try await harness.get("/youtube/v3/videos?id=9")
            #expect(cached.headers["x-tollgate-source"] == "cache")
            #expect((cached.headers["age"].flatMap(Int.init) ?? 0) > 0)
            #expect(cached.headers["ratelimit"] == nil)
            #expect(cached.headers["ratelimit-policy"] == nil)
        }
    }

    @Test("a quota refusal is a 429 with Retry-After, and its RateLimit says nothing is left")
    func quotaRefusal() async throws {
        let origin = try etagOrigin()
        defer { origin.stop() }
        try await ProxyWithAdmin.with(upstream: URL(string: origin.baseURL)!) { harness in
            try await harness.gate.quota.setLimit(bucket: "youtube.search", limit: 1)

            #expect(try await harness.get("/youtube/v3/search?q=a").status == 200)
            let refused = try await harness.get("/youtube/v3/search?q=b")
            #expect(refused.status == 429)
            let retryAfter = try #require(refused.headers["retry-after"].flatMap(Int.init))
            #expect(abs(Double(retryAfter) - PacificDay(containing: Date()).nextReset.timeIntervalSinceNow) < 5)
            #expect(Self.parameters(refused.headers["ratelimit"])["youtube.search"]?["r"] == 0)
            #expect(Self.parameters(refused.headers["ratelimit-policy"])["youtube.search"]?["q"] == 1)
        }
    }
}
