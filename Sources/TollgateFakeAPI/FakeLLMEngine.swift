import Foundation
import Synchronization

/// ``FakeLLMAPI`` without networking: request parsing, the deterministic usage, the two per-minute
/// meters (requests and tokens) and the log, all behind one lock.
final class FakeLLMEngine: Sendable {
    /// One per-minute limit's state.
    ///
    /// ``FakeLLMBehaviour/Replenishment/continuous``: `level` is the amount in use, draining at
    /// `limit` per minute since `updatedAt` (a token bucket, as OpenAI describes its limits: the
    /// reset is the time until the bucket is back to its initial state).
    /// ``FakeLLMBehaviour/Replenishment/fixedWindow``: `level` is the amount used in the window that
    /// the first counted request started, and all of it comes back at `windowEnd`.
    struct Meter {
        var level: Double = 0
        var updatedAt: Date?
        var windowEnd: Date?

        /// Brings the meter to `now`.
        mutating func settle(now: Date, limit: Int, mode: FakeLLMBehaviour.Replenishment) {
            switch mode {
            case .continuous:
                if let updatedAt, limit > 0 {
                    let drained = max(0, now.timeIntervalSince(updatedAt)) * Double(limit) / FakeLLMBehaviour.windowSeconds
                    // Rounded to a billionth, so that whole numbers of requests stay whole.
                    level = (max(0, level - drained) * 1e9).rounded() / 1e9
                }
                updatedAt = now
            case .fixedWindow:
                if let windowEnd, windowEnd <= now {
                    level = 0
                    self.windowEnd = nil
                }
            }
        }

        /// The amount in use, in whole units (a part-drained unit is still in use).
        var used: Int { Int(level.rounded(.up)) }

        /// What is left, in whole units.
        func remaining(limit: Int) -> Int { max(0, limit - used) }

        /// Seconds until everything is back.
        func secondsUntilFull(now: Date, limit: Int, mode: FakeLLMBehaviour.Replenishment) -> Double {
            switch mode {
            case .continuous: limit > 0 ? level * FakeLLMBehaviour.windowSeconds / Double(limit) : 0
            case .fixedWindow: windowEnd.map { max(0, $0.timeIntervalSince(now)) } ?? 0
            }
        }

        /// Whether `amount` more fits now.
        func fits(_ amount: Int, limit: Int) -> Bool {
            level + Double(amount) <= Double(limit)
        }

        /// Seconds until `amount` more fits; until everything is back when it never fits.
        func secondsUntilFits(_ amount: Int, now: Date, limit: Int, mode: FakeLLMBehaviour.Replenishment) -> Double {
            guard !fits(amount, limit: limit) else { return 0 }
            switch mode {
            case .continuous where amount <= limit && limit > 0:
                return (level + Double(amount) - Double(limit)) * FakeLLMBehaviour.windowSeconds / Double(limit)
            default:
                return secondsUntilFull(now: now, limit: limit, mode: mode)
            }
        }

        /// Counts `amount`, starting a fixed window if none is running.
        mutating func add(_ amount: Int, now: Date, mode: FakeLLMBehaviour.Replenishment) {
            level += Double(amount)
            if mode == .fixedWindow && windowEnd == nil {
                windowEnd = now.addingTimeInterval(FakeLLMBehaviour.windowSeconds)
            }
        }
    }

    private struct State {
        var behaviour: FakeLLMBehaviour
        var requests = Meter()
        var tokens = Meter()
        var received: [FakeLLMReceivedRequest] = []
        var billed = 0
        var completions = 0
        var streams: [FakeLLMStream] = []

        mutating func settle(now: Date) {
            requests.settle(now: now, limit: behaviour.requestsPerMinute, mode: behaviour.replenishment)
            tokens.settle(now: now, limit: behaviour.tokensPerMinute, mode: behaviour.replenishment)
        }
    }

    /// A request that passed validation.
    private struct ChatRequest {
        var model: String
        var contents: [String]
        var maxTokens: Int?
        /// `stream: true`: the answer comes as server-sent events.
        var stream = false
        /// `stream_options: {"include_usage": true}`: a last event carries the usage.
        var includeUsage = false
    }

    static let chatCompletionsPath = "/v1/chat/completions"
    static let json = ("Content-Type", "application/json")

    private let state: Mutex<State>
    /// Read inside the lock, so that the meters only move forward (the clock must not call back
    /// into the engine).
    private let now: @Sendable () -> Date

    init(behaviour: FakeLLMBehaviour, now: @escaping @Sendable () -> Date) {
        state = Mutex(State(behaviour: behaviour))
        self.now = now
    }

    var behaviour: FakeLLMBehaviour { state.withLock { $0.behaviour } }

    func updateBehaviour(_ change: (inout FakeLLMBehaviour) -> Void) {
        state.withLock { change(&$0.behaviour) }
    }

    var received: [FakeLLMReceivedRequest] { state.withLock { $0.received } }
    var billed: Int { state.withLock { $0.billed } }
    var streams: [FakeLLMStream] { state.withLock { $0.streams } }

    func clearLog() { state.withLock { $0.received.removeAll() } }

    /// Requests and tokens left at the injected clock's now.
    var remaining: (requests: Int, tokens: Int) {
        state.withLock { state in
            let now = now()
            var copy = state
            copy.settle(now: now)
            return (copy.requests.remaining(limit: copy.behaviour.requestsPerMinute),
                    copy.tokens.remaining(limit: copy.behaviour.tokensPerMinute))
        }
    }

    func answer(_ request: FakeHTTPRequest) -> FakeHTTPAnswer {
        let (answered, index) = state.withLock { state in
            let now = now()
            state.settle(now: now)
            let (answer, usage) = Self.answer(request, now: now, state: &state)
            state.received.append(FakeLLMReceivedRequest(
                method: request.method, path: request.path, headers: request.headers, body: request.body,
                status: answer.status, usage: usage
            ))
            guard let stream = answer.stream else { return (answer, 0) }
            state.streams.append(FakeLLMStream(events: stream.chunks.map { String(decoding: $0, as: UTF8.self) }))
            return (answer, state.streams.count - 1)
        }
        var answer = answered
        if answer.stream != nil {
            // The stream's record, as the server writes it.
            answer.stream?.progress = { [self] progress in
                state.withLock { state in
                    switch progress {
                    case .sent(_, let at): state.streams[index].sentAt.append(at)
                    case .finished(let at): state.streams[index].finishedAt = at
                    case .closedByClient(let at, _): state.streams[index].closedByClientAt = at
                    }
                }
            }
        }
        return answer
    }

    private static func answer(
        _ request: FakeHTTPRequest, now: Date, state: inout State
    ) -> (FakeHTTPAnswer, FakeLLMUsage?) {
        guard request.method == "POST" && request.path == chatCompletionsPath else {
            return (invalidRequest(status: 404, "Invalid URL (\(request.method) \(request.path))", state: state, now: now), nil)
        }
        let chat: ChatRequest
        switch parse(request.body) {
        case .success(let parsed): chat = parsed
        case .failure(let failure): return (invalidRequest(status: 400, failure.message, state: state, now: now), nil)
        }
        let behaviour = state.behaviour
        let usage = behaviour.usage(messageContents: chat.contents, maxTokens: chat.maxTokens)
        let mode = behaviour.replenishment
        if !state.requests.fits(1, limit: behaviour.requestsPerMinute) {
            let wait = state.requests.secondsUntilFits(1, now: now, limit: behaviour.requestsPerMinute, mode: mode)
            return (rateLimited(kind: "requests", model: chat.model, limit: behaviour.requestsPerMinute,
                                used: state.requests.used, requested: 1, wait: wait, state: state, now: now), nil)
        }
        if !state.tokens.fits(usage.totalTokens, limit: behaviour.tokensPerMinute) {
            let wait = state.tokens.secondsUntilFits(usage.totalTokens, now: now, limit: behaviour.tokensPerMinute, mode: mode)
            return (rateLimited(kind: "tokens", model: chat.model, limit: behaviour.tokensPerMinute,
                                used: state.tokens.used, requested: usage.totalTokens, wait: wait, state: state, now: now), nil)
        }
        state.requests.add(1, now: now, mode: mode)
        state.tokens.add(usage.totalTokens, now: now, mode: mode)
        state.billed += usage.totalTokens
        state.completions += 1
        let truncated = chat.maxTokens.map { $0 < behaviour.completionTokens } ?? false
        if chat.stream {
            let events = streamedEvents(chat, usage: usage, truncated: truncated, id: "chatcmpl-fake\(state.completions)",
                                        created: Int(now.timeIntervalSince1970))
            let headers = [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache")]
                + rateLimitHeaders(state, now: now)
            return (FakeHTTPAnswer(status: 200, headers: headers, body: Data(),
                                   stream: FakeHTTPStream(chunks: events, interval: behaviour.streamEventInterval) { _ in }),
                    usage)
        }
        let body = encode([
            "id": "chatcmpl-fake\(state.completions)",
            "object": "chat.completion",
            "created": Int(now.timeIntervalSince1970),
            "model": chat.model,
            "choices": [[
                "index": 0,
                "message": ["role": "assistant", "content": completionText(words: usage.completionTokens)],
                "finish_reason": truncated ? "length" : "stop",
            ] as [String: Any]],
            "usage": [
                "prompt_tokens": usage.promptTokens,
                "completion_tokens": usage.completionTokens,
                "total_tokens": usage.totalTokens,
            ],
        ])
        return (FakeHTTPAnswer(status: 200, headers: [json] + rateLimitHeaders(state, now: now), body: body), usage)
    }

    /// A streamed completion as OpenAI sends it: a first event with the role, one per word of the
    /// content, one with the finish reason, with `include_usage` one with the usage and no
    /// choices (the others then carry `"usage": null`), and `[DONE]`.
    private static func streamedEvents(
        _ chat: ChatRequest, usage: FakeLLMUsage, truncated: Bool, id: String, created: Int
    ) -> [Data] {
        func event(_ choices: [[String: Any]], usage: Any? = nil) -> Data {
            var object: [String: Any] = [
                "id": id, "object": "chat.completion.chunk", "created": created, "model": chat.model, "choices": choices,
            ]
            if chat.includeUsage { object["usage"] = usage ?? NSNull() }
            return Data("data: ".utf8) + encode(object) + Data("\n\n".utf8)
        }
        func choice(_ delta: [String: Any], finish: String? = nil) -> [String: Any] {
            ["index": 0, "delta": delta, "logprobs": NSNull(), "finish_reason": finish.map { $0 as Any } ?? NSNull()]
        }
        let words = completionText(words: usage.completionTokens).split(separator: " ")
        var events = [event([choice(["role": "assistant", "content": ""])])]
        for (index, word) in words.enumerated() {
            events.append(event([choice(["content": (index == 0 ? "" : " ") + word])]))
        }
        events.append(event([choice([:], finish: truncated ? "length" : "stop")]))
        if chat.includeUsage {
            events.append(event([], usage: [
                "prompt_tokens": usage.promptTokens,
                "completion_tokens": usage.completionTokens,
                "total_tokens": usage.totalTokens,
            ]))
        }
        events.append(Data("data: [DONE]\n\n".utf8))
        return events
    }

    private struct InvalidRequest: Error {
        var message: String
    }

    /// The request body as sent: every field optional, so that a missing one gets its own message.
    private struct WireRequest: Decodable {
        struct Message: Decodable {
            var role: String?
            var content: Content?
        }

        /// A message's content: text, or an array of text parts.
        enum Content: Decodable {
            case text(String)
            case parts([Part])

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let text = try? container.decode(String.self) {
                    self = .text(text)
                } else {
                    self = .parts(try container.decode([Part].self))
                }
            }

            var texts: [String] {
                switch self {
                case .text(let text): [text]
                case .parts(let parts): parts.map(\.text)
                }
            }
        }

        struct Part: Decodable {
            var text: String
        }

        var model: String?
        var messages: [Message]?
        var maxTokens: Int?
        var maxCompletionTokens: Int?
        var stream: Bool?
        var streamOptions: StreamOptions?

        struct StreamOptions: Decodable {
            var includeUsage: Bool?

            enum CodingKeys: String, CodingKey {
                case includeUsage = "include_usage"
            }
        }

        enum CodingKeys: String, CodingKey {
            case model, messages, stream
            case maxTokens = "max_tokens"
            case maxCompletionTokens = "max_completion_tokens"
            case streamOptions = "stream_options"
        }
    }

    private static func parse(_ body: Data) -> Result<ChatRequest, InvalidRequest> {
        guard (try? JSONSerialization.jsonObject(with: body)) is [String: Any] else {
            return .failure(InvalidRequest(message: "We could not parse the JSON body of your request. The API expects a "
                + "JSON object as the body, but what was sent was not valid JSON."))
        }
        let wire: WireRequest
        do {
            wire = try JSONDecoder().decode(WireRequest.self, from: body)
        } catch {
            return .failure(InvalidRequest(message: "Invalid request body: \(error)"))
        }
        guard let model = wire.model, !model.isEmpty else {
            return .failure(InvalidRequest(message: "you must provide a model parameter"))
        }
        guard let messages = wire.messages, !messages.isEmpty else {
            return .failure(InvalidRequest(message: "'messages' must be a non-empty array of message objects"))
        }
        var contents: [String] = []
        for (index, message) in messages.enumerated() {
            guard message.role != nil else {
                return .failure(InvalidRequest(message: "'messages.\(index).role' is a required property"))
            }
            guard let content = message.content else {
                return .failure(InvalidRequest(message: "'messages.\(index).content' is a required property"))
            }
            contents += content.texts
        }
        let limits = [wire.maxTokens, wire.maxCompletionTokens].compactMap { $0 }
        if let small = limits.first(where: { $0 < 1 }) {
            return .failure(InvalidRequest(message: "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, "
                + "but got \(small) instead."))
        }
        return .success(ChatRequest(model: model, contents: contents, maxTokens: limits.min(), stream: wire.stream ?? false,
                                    includeUsage: wire.streamOptions?.includeUsage ?? false))
    }

    /// `words` words of text, so that the answer's own word count is its completion tokens.
    static func completionText(words: Int) -> String {
        let vocabulary = ["this", "is", "a", "fake", "completion", "of", "exactly", "as", "many", "words", "as",
                          "it", "bills", "tokens"]
        return (0..<max(0, words)).map { vocabulary[$0 % vocabulary.count] }.joined(separator: " ")
    }

    private static func invalidRequest(status: Int, _ message: String, state: State, now: Date) -> FakeHTTPAnswer {
        let body = encode(["error": [
            "message": message, "type": "invalid_request_error", "param": NSNull(), "code": NSNull(),
        ] as [String: Any]])
        return FakeHTTPAnswer(status: status, headers: [json] + rateLimitHeaders(state, now: now), body: body)
    }

    private static func rateLimited(
        kind: String, model: String, limit: Int, used: Int, requested: Int, wait: Double, state: State, now: Date
    ) -> FakeHTTPAnswer {
        let unit = kind == "requests" ? "requests per min (RPM)" : "tokens per min (TPM)"
        let message = "Rate limit reached for \(model) in organization org-fake on \(unit): Limit \(limit), "
            + "Used \(used), Requested \(requested). Please try again in \(goDuration(seconds: wait)). "
            + "Visit https://platform.openai.com/account/rate-limits to learn more."
        let body = encode(["error": [
            "message": message, "type": kind, "param": NSNull(), "code": "rate_limit_exceeded",
        ] as [String: Any]])
        let retryAfter = max(1, Int(wait.rounded(.up)))
        let headers = [json, ("retry-after", String(retryAfter))] + rateLimitHeaders(state, now: now)
        return FakeHTTPAnswer(status: 429, headers: headers, body: body)
    }

    private static func rateLimitHeaders(_ state: State, now: Date) -> [(String, String)] {
        let behaviour = state.behaviour
        let mode = behaviour.replenishment
        return [
            ("x-ratelimit-limit-requests", String(behaviour.requestsPerMinute)),
            ("x-ratelimit-limit-tokens", String(behaviour.tokensPerMinute)),
            ("x-ratelimit-remaining-requests", String(state.requests.remaining(limit: behaviour.requestsPerMinute))),
            ("x-ratelimit-remaining-tokens", String(state.tokens.remaining(limit: behaviour.tokensPerMinute))),
            ("x-ratelimit-reset-requests", goDuration(
                seconds: state.requests.secondsUntilFull(now: now, limit: behaviour.requestsPerMinute, mode: mode))),
            ("x-ratelimit-reset-tokens", goDuration(
                seconds: state.tokens.secondsUntilFull(now: now, limit: behaviour.tokensPerMinute, mode: mode))),
        ]
    }

    /// Seconds as Go's `time.Duration` prints them, rounded up to the millisecond (`6m0s`, `1s`,
    /// `59.5s`, `120ms`, `0s`).
    static func goDuration(seconds: Double) -> String {
        // The billionth subtracted keeps float noise (1.0000000001 s) from adding a millisecond.
        let milliseconds = max(0, (seconds * 1_000 - 1e-6).rounded(.up))
        return goDuration(nanoseconds: Int64(milliseconds) * 1_000_000)
    }

    /// Nanoseconds as Go's `time.Duration.String()` prints them.
    static func goDuration(nanoseconds: Int64) -> String {
        guard nanoseconds != 0 else { return "0s" }
        let sign = nanoseconds < 0 ? "-" : ""
        var value = nanoseconds.magnitude
        let text: String
        if value < 1_000 {
            text = "\(value)ns"
        } else if value < 1_000_000 {
            text = fraction(value, digits: 3) + "µs"
        } else if value < 1_000_000_000 {
            text = fraction(value, digits: 6) + "ms"
        } else {
            let seconds = fraction(value % 60_000_000_000, digits: 9) + "s"
            value /= 60_000_000_000
            if value == 0 {
                text = seconds
            } else if value < 60 {
                text = "\(value)m" + seconds
            } else {
                text = "\(value / 60)h\(value % 60)m" + seconds
            }
        }
        return sign + text
    }

    /// `value` divided by 10^digits, with its fraction's trailing zeros (and a bare point) dropped.
    private static func fraction(_ value: UInt64, digits: Int) -> String {
        var scale: UInt64 = 1
        for _ in 0..<digits { scale *= 10 }
        let whole = value / scale
        let part = value % scale
        guard part > 0 else { return "\(whole)" }
        var decimals = String(part)
        decimals = String(repeating: "0", count: digits - decimals.count) + decimals
        while decimals.hasSuffix("0") { decimals.removeLast() }
        return "\(whole).\(decimals)"
    }

    private static func encode(_ object: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    }
}
