import Foundation
import Testing
import Tollgate
@testable import TollgateFakeAPI
import TollgateTestSupport

/// The fake OpenAI-style chat completions API over real loopback HTTP: the documented token rule,
/// OpenAI's rate-limit headers with Go-duration resets, 429s and the billing total.
@Suite("FakeLLMAPI bills tokens and rate-limits like an OpenAI-style API")
struct FakeLLMAPITests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// Runs `body` with a fake on a manual clock at ``start``, stopping it whatever happens.
    private func withLLM(
        _ behaviour: FakeLLMBehaviour = FakeLLMBehaviour(), _ body: (FakeLLMAPI, ManualClock) async throws -> Void
    ) async throws {
        let clock = ManualClock(now: Self.start)
        let llm = try await FakeLLMAPI.start(behaviour: behaviour, now: { clock.now() })
        try await withStopping(llm, stop: { await $0.stop() }) { llm in
            try await body(llm, clock)
        }
    }

    /// Asks for a completion of `words` words of prompt in one user message.
    private func chat(_ llm: FakeLLMAPI, words: Int, maxTokens: Int? = nil) async throws -> LoopbackHTTP.Answer {
        var body: [String: Any] = [
            "model": "gpt-fake",
            "messages": [["role": "user", "content": Array(repeating: "word", count: words).joined(separator: " ")]],
        ]
        if let maxTokens { body["max_tokens"] = maxTokens }
        return try await LoopbackHTTP.post(llm.chatCompletionsURL, json: body)
    }

    private func usage(_ answer: LoopbackHTTP.Answer) -> [String: Int]? {
        answer.json?["usage"] as? [String: Int]
    }

    @Test("usage follows the documented word rule, the answer has that many words, and the headers count down")
    func usageAndHeaders() async throws {
        try await withLLM { llm, _ in
            let answer = try await LoopbackHTTP.post(llm.chatCompletionsURL, json: [
                "model": "gpt-fake",
                "messages": [
                    ["role": "system", "content": "Be  brief.\n"],
                    ["role": "user", "content": "Hello there, how are you?"],
                ],
            ])
            #expect(answer.status == 200)
            #expect(usage(answer) == ["prompt_tokens": 7, "completion_tokens": 20, "total_tokens": 27])
            let json = try #require(answer.json)
            #expect(json["object"] as? String == "chat.completion")
            #expect(json["model"] as? String == "gpt-fake")
            #expect((json["id"] as? String)?.hasPrefix("chatcmpl-") == true)
            let choice = try #require((json["choices"] as? [[String: Any]])?.first)
            #expect(choice["finish_reason"] as? String == "stop")
            let content = try #require((choice["message"] as? [String: Any])?["content"] as? String)
            #expect(content.split(separator: " ").count == 20)

            #expect(answer.header("x-ratelimit-limit-requests") == "60")
            #expect(answer.header("x-ratelimit-remaining-requests") == "59")
            #expect(answer.header("x-ratelimit-reset-requests") == "1s", "one request of 60 a minute drains in a second")
            #expect(answer.header("x-ratelimit-limit-tokens") == "10000")
            #expect(answer.header("x-ratelimit-remaining-tokens") == "9973")
            #expect(answer.header("x-ratelimit-reset-tokens") == "162ms", "27 of 10,000 a minute")

            #expect(llm.usage(messages: ["Be  brief.\n", "Hello there, how are you?"]).totalTokens == 27)
            #expect(llm.totalTokensBilled == 27)
            #expect(llm.receivedRequests.map(\.usage) == [FakeLLMUsage(promptTokens: 7, completionTokens: 20)])
        }
    }

    @Test("max_tokens below the completion length cuts it (finish_reason length); an empty prompt bills 1")
    func maxTokens() async throws {
        try await withLLM(FakeLLMBehaviour(completionTokens: 12)) { llm, _ in
            let cut = try await chat(llm, words: 4, maxTokens: 5)
            #expect(usage(cut) == ["prompt_tokens": 4, "completion_tokens": 5, "total_tokens": 9])
            let choice = (cut.json?["choices"] as? [[String: Any]])?.first
            #expect(choice?["finish_reason"] as? String == "length")

            let uncut = try await chat(llm, words: 3, maxTokens: 50)
            #expect(usage(uncut) == ["prompt_tokens": 3, "completion_tokens": 12, "total_tokens": 15])

            let empty = try await chat(llm, words: 0)
            #expect(usage(empty) == ["prompt_tokens": 1, "completion_tokens": 12, "total_tokens": 13])
            #expect(llm.totalTokensBilled == 9 + 15 + 13)
            #expect(empty.header("x-ratelimit-remaining-tokens") == String(10_000 - 37))
        }
    }

    @Test("when tokens run out: 429 of type tokens with retry-after, nothing billed or counted")
    func tokensRunOut() async throws {
        try await withLLM(FakeLLMBehaviour(tokensPerMinute: 100)) { llm, _ in
            #expect(try await chat(llm, words: 30).status == 200)
            let second = try await chat(llm, words: 30)
            #expect(second.status == 200)
            #expect(second.header("x-ratelimit-remaining-tokens") == "0")
            #expect(second.header("x-ratelimit-reset-tokens") == "1m0s")

            let refused = try await chat(llm, words: 30)
            #expect(refused.status == 429)
            let error = try #require(refused.json?["error"] as? [String: Any])
            #expect(error["type"] as? String == "tokens")
            #expect(error["code"] as? String == "rate_limit_exceeded")
            let message = try #require(error["message"] as? String)
            #expect(message.hasPrefix("Rate limit reached"))
            #expect(message.contains("Please try again in 30s"), "50 tokens at 100 a minute")
            #expect(refused.header("retry-after") == "30")
            #expect(refused.header("x-ratelimit-remaining-tokens") == "0")
            #expect(refused.header("x-ratelimit-remaining-requests") == "58", "the refused request is not counted")
            #expect(llm.totalTokensBilled == 100)
            #expect(llm.receivedRequests.map(\.status) == [200, 200, 429])
            #expect(llm.receivedRequests.last?.usage == nil)
        }
    }

    @Test("when requests run out: 429 of type requests")
    func requestsRunOut() async throws {
        try await withLLM(FakeLLMBehaviour(requestsPerMinute: 2)) { llm, _ in
            _ = try await chat(llm, words: 1)
            let second = try await chat(llm, words: 1)
            #expect(second.header("x-ratelimit-remaining-requests") == "0")
            #expect(second.header("x-ratelimit-reset-requests") == "1m0s")
            let refused = try await chat(llm, words: 1)
            #expect(refused.status == 429)
            #expect((refused.json?["error"] as? [String: Any])?["type"] as? String == "requests")
            #expect(refused.header("retry-after") == "30", "one request of 2 a minute comes back in 30 s")
            #expect(llm.remainingRequests == 0)
        }
    }

    @Test("spent requests and tokens drain back as the injected clock moves; resets are Go durations")
    func continuousReplenishment() async throws {
        try await withLLM { llm, clock in
            for _ in 0..<3 { _ = try await chat(llm, words: 5) }
            #expect(llm.remainingRequests == 57)
            #expect(llm.remainingTokens == 10_000 - 75)

            clock.advance(by: .milliseconds(1_500))
            #expect(llm.remainingRequests == 58, "1.5 of 3 requests back: a part-drained one still counts")
            #expect(llm.remainingTokens == 10_000, "75 tokens drain in 450 ms")
            let next = try await chat(llm, words: 5)
            #expect(next.header("x-ratelimit-remaining-requests") == "57")
            #expect(next.header("x-ratelimit-reset-requests") == "2.5s")
            #expect(next.header("x-ratelimit-remaining-tokens") == "9975")
            #expect(next.header("x-ratelimit-reset-tokens") == "150ms")
        }
    }

    @Test("with a fixed window everything comes back at the window's end, and not before")
    func fixedWindow() async throws {
        try await withLLM(FakeLLMBehaviour(requestsPerMinute: 2, replenishment: .fixedWindow)) { llm, clock in
            _ = try await chat(llm, words: 1)
            clock.advance(by: .milliseconds(500))
            let second = try await chat(llm, words: 1)
            #expect(second.header("x-ratelimit-reset-requests") == "59.5s")
            #expect(second.header("x-ratelimit-reset-tokens") == "59.5s")

            clock.advance(by: .seconds(50))
            let refused = try await chat(llm, words: 1)
            #expect(refused.status == 429)
            #expect(refused.header("retry-after") == "10")
            #expect(refused.header("x-ratelimit-reset-requests") == "9.5s")

            clock.advance(by: .milliseconds(9_500))
            let again = try await chat(llm, words: 1)
            #expect(again.status == 200)
            #expect(again.header("x-ratelimit-remaining-requests") == "1")
            #expect(again.header("x-ratelimit-reset-requests") == "1m0s")
        }
    }

    @Test("an invalid body is a 400 invalid_request_error and another route a 404; neither is counted")
    func invalidRequests() async throws {
        try await withLLM { llm, _ in
            let garbage = try await LoopbackHTTP.send(llm.chatCompletionsURL, method: "POST", body: Data("not json".utf8))
            #expect(garbage.status == 400)
            #expect((garbage.json?["error"] as? [String: Any])?["type"] as? String == "invalid_request_error")
            #expect(garbage.header("x-ratelimit-remaining-requests") == "60")

            let noModel = try await LoopbackHTTP.post(llm.chatCompletionsURL, json: ["messages": [["role": "user", "content": "hi"]]])
            #expect(noModel.status == 400)
            let noMessages = try await LoopbackHTTP.post(llm.chatCompletionsURL, json: ["model": "gpt-fake", "messages": [] as [Any]])
            #expect(noMessages.status == 400)
            #expect(try await chat(llm, words: 2, maxTokens: 0).status == 400)

            let wrongMethod = try await LoopbackHTTP.send(llm.chatCompletionsURL)
            #expect(wrongMethod.status == 404)
            #expect(llm.remainingRequests == 60)
            #expect(llm.totalTokensBilled == 0)
            #expect(llm.receivedRequests.allSatisfy { $0.usage == nil })
        }
    }

    @Test("Go's Duration.String text, rounded up to the millisecond", arguments: [
        (0.0, "0s"), (0.12, "120ms"), (0.0001, "1ms"), (1.0, "1s"), (59.5, "59.5s"), (60.0, "1m0s"),
        (360.0, "6m0s"), (3_600.0, "1h0m0s"), (3_661.25, "1h1m1.25s"), (8.64, "8.64s"),
    ])
    func goDurations(seconds: Double, text: String) {
        #expect(FakeLLMEngine.goDuration(seconds: seconds) == text)
    }

    @Test("Go's Duration.String text below a millisecond", arguments: [
        (Int64(999), "999ns"), (1_500, "1.5µs"), (1_000_000, "1ms"), (-2_000_000_000, "-2s"),
    ])
    func goDurationsBelowAMillisecond(nanoseconds: Int64, text: String) {
        #expect(FakeLLMEngine.goDuration(nanoseconds: nanoseconds) == text)
    }
}
