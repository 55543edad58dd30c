import Foundation
import Logging

/// A real HTTP server on loopback that answers like an OpenAI-style chat completions API, bills
/// tokens in a deterministic way and rate-limits requests and tokens per minute.
///
/// `POST /v1/chat/completions` with `{"model": …, "messages": [{"role": …, "content": …}],
/// "max_tokens": N}` answers `200` with a `chat.completion` whose `usage` follows
/// ``FakeLLMBehaviour/usage(messageContents:maxTokens:)``:
/// - prompt tokens: the whitespace-separated words of every message's content, at least 1;
/// - completion tokens: ``FakeLLMBehaviour/completionTokens`` (20 by default), or `max_tokens`
///   (or `max_completion_tokens`) when smaller, and then `finish_reason` is `length`;
/// - total tokens: their sum. The assistant's content has exactly as many words.
///
/// With `"stream": true` the answer is `text/event-stream`: OpenAI's `chat.completion.chunk`
/// events (the role, one per word, the finish reason; with `stream_options: {"include_usage":
/// true}` a last one with the usage), then `data: [DONE]`, written
/// ``FakeLLMBehaviour/streamEventInterval`` apart (``streams`` records when).
///
/// Every answer carries OpenAI's `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests`,
/// `x-ratelimit-reset-requests` and the same three for `-tokens`; resets are Go durations (`1s`,
/// `59.5s`, `150ms`, `6m0s`) rounded up to the millisecond. A request is let through when one more
/// request and its total tokens both fit; otherwise it gets `429` with
/// `{"error":{"message":"Rate limit reached …","type":"requests"|"tokens","code":"rate_limit_exceeded"}}`
/// and `retry-after` in whole seconds (at least 1), and counts against nothing. A body that is not
/// a valid request gets `400` with `type` `invalid_request_error`, another path or method `404`;
/// neither counts.
///
/// ```swift
/// let clock = ManualClock()
/// let llm = try await FakeLLMAPI.start(behaviour: FakeLLMBehaviour(tokensPerMinute: 100), now: { clock.now() })
/// var request = URLRequest(url: llm.chatCompletionsURL)
/// ```
public final class FakeLLMAPI: Sendable {
    private let server: LoopbackFakeServer
    private let engine: FakeLLMEngine

    /// The port the operating system picked on 127.0.0.1.
    public var port: Int { server.port }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// `http://127.0.0.1:PORT/v1/chat/completions`.
    public var chatCompletionsURL: URL { baseURL.appending(path: "v1/chat/completions") }

    private init(server: LoopbackFakeServer, engine: FakeLLMEngine) {
        self.server = server
        self.engine = engine
    }

    /// Starts a server on 127.0.0.1, on a port the operating system picks.
    /// - Parameters:
    ///   - behaviour: The limits and the completion length to start with.
    ///   - now: The clock the meters drain and reset by; a test moves it instead of sleeping.
    ///   - logger: Where the server logs; the task's current logger by default.
    /// - Returns: The running server.
    /// - Throws: ``FakeAPIError/couldNotStart`` when the server cannot bind.
    public static func start(
        behaviour: FakeLLMBehaviour = FakeLLMBehaviour(),
        now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger.current
    ) async throws -> FakeLLMAPI {
        let engine = FakeLLMEngine(behaviour: behaviour, now: now)
        let server = try await LoopbackFakeServer.start(serverName: "FakeLLMAPI", logger: logger) { request in
            engine.answer(request)
        }
        return FakeLLMAPI(server: server, engine: engine)
    }

    /// Stops the server and waits until it has closed its socket.
    public func stop() async {
        await server.stop()
    }

    /// The limits and settings in force.
    public var behaviour: FakeLLMBehaviour { engine.behaviour }

    /// Changes limits or settings while the server runs. What the meters hold stays.
    /// - Parameter change: Edits the behaviour in place.
    public func updateBehaviour(_ change: (inout FakeLLMBehaviour) -> Void) {
        engine.updateBehaviour(change)
    }

    /// Every request received so far, oldest first.
    public var receivedRequests: [FakeLLMReceivedRequest] { engine.received }

    /// Forgets the received requests (``totalTokensBilled`` stays).
    public func clearReceivedRequests() { engine.clearLog() }

    /// The sum of `usage.total_tokens` over every `200` answer so far: what a ledger that bills
    /// from the answers should hold.
    public var totalTokensBilled: Int { engine.billed }

    /// Every streamed answer (`"stream": true`) so far, oldest first, with when each event was
    /// written and whether the client stayed to the end.
    public var streams: [FakeLLMStream] { engine.streams }

    /// Requests left at the injected clock's now, as `x-ratelimit-remaining-requests` would say.
    public var remainingRequests: Int { engine.remaining.requests }

    /// Tokens left at the injected clock's now, as `x-ratelimit-remaining-tokens` would say.
    public var remainingTokens: Int { engine.remaining.tokens }

    /// The usage this fake bills for a request, with the settings in force: what a test predicts.
    /// - Parameters:
    ///   - messages: Every message's content.
    ///   - maxTokens: The request's `max_tokens`, if any.
    /// - Returns: Prompt, completion and total tokens.
    public func usage(messages: [String], maxTokens: Int? = nil) -> FakeLLMUsage {
        engine.behaviour.usage(messageContents: messages, maxTokens: maxTokens)
    }
}

/// The limits and settings of ``FakeLLMAPI``.
public struct FakeLLMBehaviour: Sendable, Hashable {
    /// The length of the limits' window: a minute.
    public static let windowSeconds: Double = 60

    /// How spent requests and tokens come back.
    public enum Replenishment: Sendable, Hashable {
        /// As OpenAI describes its limits: what is spent drains back continuously, a limit's worth
        /// a minute, and the reset headers tell when all of it is back (after one request of 60
        /// a minute, `1s`).
        case continuous
        /// A minute-long window starts at the first counted request and all of it comes back at
        /// its end; the reset headers tell the time to that end.
        case fixedWindow
    }

    /// Requests a minute (60 by default).
    public var requestsPerMinute: Int
    /// Tokens a minute, prompt and completion together (10,000 by default).
    public var tokensPerMinute: Int
    /// The completion length in tokens when `max_tokens` does not cut it (20 by default).
    public var completionTokens: Int
    /// How spent requests and tokens come back; continuously by default.
    public var replenishment: Replenishment
    /// With `"stream": true`, the time between two server-sent events (real time: the events are
    /// written that far apart); none by default.
    public var streamEventInterval: Duration = .zero

    /// Creates settings.
    /// - Parameters:
    ///   - requestsPerMinute: Requests a minute.
    ///   - tokensPerMinute: Tokens a minute.
    ///   - completionTokens: The completion length in tokens.
    ///   - replenishment: How spent requests and tokens come back.
    ///   - streamEventInterval: The time between two server-sent events of a streamed answer.
    public init(
        requestsPerMinute: Int = 60, tokensPerMinute: Int = 10_000, completionTokens: Int = 20,
        replenishment: Replenishment = .continuous, streamEventInterval: Duration = .zero
    ) {
        self.requestsPerMinute = requestsPerMinute
        self.tokensPerMinute = tokensPerMinute
        self.completionTokens = completionTokens
        self.replenishment = replenishment
        self.streamEventInterval = streamEventInterval
    }

    /// The usage billed for a request: prompt tokens are the whitespace-separated words across
    /// every message's content (at least 1); completion tokens are ``completionTokens``, or
    /// `maxTokens` when smaller; the total is their sum.
    /// - Parameters:
    ///   - messageContents: Every message's content (each text part of an array content apart).
    ///   - maxTokens: The request's `max_tokens`, if any.
    /// - Returns: Prompt, completion and total tokens.
    public func usage(messageContents: [String], maxTokens: Int?) -> FakeLLMUsage {
        let words = messageContents.map { $0.split(whereSeparator: \.isWhitespace).count }.reduce(0, +)
        let completion = max(0, min(completionTokens, maxTokens ?? Int.max))
        return FakeLLMUsage(promptTokens: max(1, words), completionTokens: completion)
    }
}

/// One streamed answer of ``FakeLLMAPI``, as the server wrote it.
public struct FakeLLMStream: Sendable, Hashable {
    /// The server-sent events, each `data: …` and its blank line.
    public let events: [String]
    /// When each event was written, in order (fewer than ``events`` when the client went first).
    public var sentAt: [Date] = []
    /// When the last event was written.
    public var finishedAt: Date?
    /// When the server saw the client close the connection before the last event.
    public var closedByClientAt: Date?

    /// Creates a record.
    /// - Parameter events: The events to write.
    public init(events: [String]) {
        self.events = events
    }
}

/// The `usage` object of a chat completion.
public struct FakeLLMUsage: Sendable, Hashable {
    /// `prompt_tokens`.
    public let promptTokens: Int
    /// `completion_tokens`.
    public let completionTokens: Int
    /// `total_tokens`: prompt and completion together.
    public var totalTokens: Int { promptTokens + completionTokens }

    /// Creates a usage.
    /// - Parameters:
    ///   - promptTokens: `prompt_tokens`.
    ///   - completionTokens: `completion_tokens`.
    public init(promptTokens: Int, completionTokens: Int) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
    }
}

/// One request ``FakeLLMAPI`` received, as it arrived on the wire.
public struct FakeLLMReceivedRequest: Sendable, Hashable {
    /// The method, such as `POST`.
    public let method: String
    /// The path, such as `/v1/chat/completions`.
    public let path: String
    /// Every header field as received, lowercased names.
    public let headers: [String: String]
    /// The body bytes.
    public let body: Data
    /// The status the fake answered with.
    public let status: Int
    /// The usage billed, for a `200`; nil for anything else.
    public let usage: FakeLLMUsage?

    /// The `Authorization` header, if the client sent one.
    public var authorization: String? { headers["authorization"] }
}
