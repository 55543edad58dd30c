import Foundation
import HTTPTypes
import Testing
@testable import Tollgate

@Suite("Announced limits: the IETF fields and the vendor families read into one model")
struct AnnouncedLimitTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    @Test("IETF: RateLimit with RateLimit-Policy, several policies, names as strings or tokens")
    func ietf() {
        let limits = AnnouncedLimit.parse(fields([
            ("RateLimit-Policy", #""burst";q=100;w=60, daily;q=1000;w=86400;qu="content-bytes""#),
            ("RateLimit", #""burst";r=50;t=30, daily;r=900;t=3600"#),
        ]), at: Self.now)
        #expect(limits == [
            AnnouncedLimit(policy: "burst", limit: 100, remaining: 50, resetsAt: Self.now + 30, window: .seconds(60)),
            AnnouncedLimit(policy: "daily", limit: 1000, remaining: 900, resetsAt: Self.now + 3600, window: .seconds(86_400)),
        ])
    }

    @Test("IETF's earlier drafts: RateLimit-Limit, -Remaining, -Reset in seconds")
    func earlierDrafts() {
        let limits = AnnouncedLimit.parse(fields([
            ("RateLimit-Limit", "100"), ("RateLimit-Remaining", "7"), ("RateLimit-Reset", "12"),
        ]), at: Self.now)
        #expect(limits == [AnnouncedLimit(limit: 100, remaining: 7, resetsAt: Self.now + 12)])
    }

    @Test("GitHub: X-RateLimit-* with a Unix-time reset and the resource as the policy")
    func gitHub() {
        let limits = AnnouncedLimit.parse(fields([
            ("X-RateLimit-Limit", "5000"), ("X-RateLimit-Remaining", "4987"), ("X-RateLimit-Reset", "1800003600"),
            ("X-RateLimit-Used", "13"), ("X-RateLimit-Resource", "core"),
        ]), at: Self.now)
        #expect(limits == [AnnouncedLimit(policy: "core", limit: 5000, remaining: 4987,
                                          resetsAt: Date(timeIntervalSince1970: 1_800_003_600))])
    }

    @Test("OpenAI: requests and tokens, resets as Go durations")
    func openAI() {
        let limits = AnnouncedLimit.parse(fields([
            ("x-ratelimit-limit-requests", "500"), ("x-ratelimit-remaining-requests", "499"), ("x-ratelimit-reset-requests", "120ms"),
            ("x-ratelimit-limit-tokens", "30000"), ("x-ratelimit-remaining-tokens", "29000"), ("x-ratelimit-reset-tokens", "6m0s"),
        ]), at: Self.now)
        #expect(limits == [
            AnnouncedLimit(unit: .requests, limit: 500, remaining: 499, resetsAt: Self.now + 0.12),
            AnnouncedLimit(unit: .tokens, limit: 30_000, remaining: 29_000, resetsAt: Self.now + 360),
        ])
    }

    @Test("Anthropic: requests, tokens, input and output tokens, resets in RFC 3339")
    func anthropic() {
        let limits = AnnouncedLimit.parse(fields([
            ("anthropic-ratelimit-requests-limit", "50"), ("anthropic-ratelimit-requests-remaining", "49"),
            ("anthropic-ratelimit-requests-reset", "2027-01-15T08:01:00Z"),
            ("anthropic-ratelimit-input-tokens-limit", "40000"), ("anthropic-ratelimit-input-tokens-remaining", "39000"),
            ("anthropic-ratelimit-input-tokens-reset", "2027-01-15T08:00:30.5Z"),
        ]), at: Self.now)
        #expect(limits.count == 2)
        #expect(limits.first == AnnouncedLimit(unit: .requests, limit: 50, remaining: 49,
                                               resetsAt: Date(timeIntervalSince1970: 1_800_000_060)))
        #expect(limits.last?.unit == .inputTokens)
        #expect(limits.last?.resetsAt == Date(timeIntervalSince1970: 1_800_000_030.5))
    }

    @Test("what does not parse is skipped, never guessed", arguments: [
        [("RateLimit", "not a list ((")], [("RateLimit", #""p";t=30"#)], [("X-RateLimit-Remaining", "-3")],
        [("X-RateLimit-Remaining", "many")], [("x-ratelimit-remaining-requests", "")],
    ])
    func malformedSkipped(pairs: [(String, String)]) {
        #expect(AnnouncedLimit.parse(fields(pairs), at: Self.now).isEmpty)
    }

    @Test("Go durations", arguments: [("6m0s", 360.0), ("1h2m3.5s", 3723.5), ("59ms", 0.059), ("20s", 20.0)])
    func goDurations(text: String, seconds: Double) {
        #expect(abs((AnnouncedLimit.goDuration(text) ?? -1) - seconds) < 0.000_001)
    }

    @Test("not Go durations", arguments: ["", "6", "6x", "m", "1.2.3s"])
    func notGoDurations(text: String) {
        #expect(AnnouncedLimit.goDuration(text) == nil)
    }
}
