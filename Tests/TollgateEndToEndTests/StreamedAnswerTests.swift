import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateAsyncHTTPClient
import TollgateFakeAPI
import TollgateTestSupport

/// `GateRequestOptions(streamsBodies: true)` over AsyncHTTPClient and real loopback servers: the
/// body comes as it arrives, is stored only when it ended whole, and its cost is settled at its end.
@Suite("Answers streamed through the gate")
struct StreamedAnswerTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// A gate over a fresh file with AsyncHTTPClient, and an LLM endpoint `chat` charged 1 request
    /// and an estimate of 1,000 tokens, settled at the body's usage.total_tokens.
    struct Harness {
        let directory: TemporaryDirectory
        let store: SQLiteStore
        let gate: Gate

        init() throws {
            directory = try TemporaryDirectory()
            store = try SQLiteStore(path: directory.path("gate.sqlite"))
            var configuration = GateConfiguration.youTubeDataAPIv3
            configuration.quota = QuotaConfiguration(
                bucketLimits: ["requests": 500, "tokens": 30_000],
                endpointCosts: ["chat": .init(bucket: "requests", units: 1, additionalCharges: [.init(bucket: "tokens", units: 1_000)],
                                              actualCost: .init(bucket: "tokens", source: .jsonBody(path: ["usage", "total_tokens"])))],
                defaultBucket: "requests"
            )
            configuration.retry.jitter = 0
            gate = try Gate(store: store, transport: AsyncHTTPClientTransport(timeout: .seconds(10)),
                            configuration: configuration, clock: SimulatedClock(base: ManualClock(now: StreamedAnswerTests.start)))
        }
    }

    static func chat(_ llm: FakeLLMAPI, maxTokens: Int) -> (HTTPRequest, Data) {
        var request = HTTPRequest(method: .post, url: llm.chatCompletionsURL)
        request.headerFields[.contentType] = "application/json"
        let body = #"{"model":"fake-1","messages":[{"role":"user","content":"three words here"}],"max_tokens":\#(maxTokens),"stream":true,"stream_options":{"include_usage":true}}"#
        return (request, Data(body.utf8))
    }

    @Test("a GET's body comes as a stream, is stored when it ends whole, and the repeat is a fresh hit served as bytes")
    func storedWhenWhole() async throws {
        let body = Data((0..<200_000).map { UInt8($0 % 251) })
        let origin = try ScriptedHTTPServer { _ in
            .init(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"b1\"")], body: body)
        }
        defer { origin.stop() }
        let harness = try Harness()
        let request = HTTPRequest(url: URL(string: "\(origin.baseURL)/large")!)
        let first = try await harness.gate.send(request, endpoint: "large", options: GateRequestOptions(streamsBodies: true))
        #expect(first.source == .network)
        #expect(first.body.isEmpty)
        let stream = try #require(first.bodyStream)
        var received = Data()
        for try await chunk in stream { received.append(chunk) }
        #expect(received == body)
        try await harness.gate.flush()

        let repeated = try await harness.gate.send(request, endpoint: "large", options: GateRequestOptions(streamsBodies: true))
        #expect(repeated.source == .cache)
        #expect(repeated.bodyStream == nil, "a hit is served from the store as bytes")
        #expect(repeated.body == body)
        #expect(origin.requests.count == 1)
    }

    @Test("a body cut short by the server fails its reader and is not stored: the next request goes to the server")
    func cutShortIsNotStored() async throws {
        let body = Data(repeating: 7, count: 100_000)
        let origin = try ScriptedHTTPServer { _ in
            .init(headers: [("Cache-Control", "max-age=60")], body: body, cutAfter: 30_000)
        }
        defer { origin.stop() }
        let harness = try Harness()
        let request = HTTPRequest(url: URL(string: "\(origin.baseURL)/cut")!)
        let first = try await harness.gate.send(request, endpoint: "cut", options: GateRequestOptions(streamsBodies: true))
        let stream = try #require(first.bodyStream)
        await #expect(throws: (any Error).self) {
            for try await _ in stream {}
        }
        try await harness.gate.flush()
        let second = try await harness.gate.send(request, endpoint: "cut", options: GateRequestOptions(streamsBodies: true))
        #expect(second.source == .network)
        #expect(origin.requests.count == 2)
        await #expect(throws: (any Error).self) {
            for try await _ in try #require(second.bodyStream) {}
        }
        try await harness.gate.flush()
    }

    @Test("server-sent events reach the caller before the stream ends, and the tokens are settled at the last usage event")
    func eventsAndTheirCost() async throws {
        let llm = try await FakeLLMAPI.start(behaviour: FakeLLMBehaviour(
            requestsPerMinute: 500, tokensPerMinute: 30_000, streamEventInterval: .milliseconds(150)))
        try await withStopping(llm, stop: { await $0.stop() }) { llm in
            let harness = try Harness()
            let (request, body) = Self.chat(llm, maxTokens: 3)
            let answer = try await harness.gate.send(request, body: body, endpoint: "chat",
                                                     options: GateRequestOptions(streamsBodies: true))
            #expect(answer.response.headerFields[.contentType]?.hasPrefix("text/event-stream") == true)
            let stream = try #require(answer.bodyStream)
            var iterator = stream.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(String(decoding: first, as: UTF8.self).hasPrefix("data: "))
            #expect(llm.streams.last?.finishedAt == nil, "the first event came before the last was written")
            var text = String(decoding: first, as: UTF8.self)
            while let chunk = try await iterator.next() { text += String(decoding: chunk, as: UTF8.self) }
            #expect(text.hasSuffix("data: [DONE]\n\n"))
            try await harness.gate.flush()
            let expected = llm.usage(messages: ["three words here"], maxTokens: 3).totalTokens
            #expect(try await harness.gate.quota.status(bucket: "tokens").unitsUsed == expected)
            #expect(try await harness.gate.quota.discrepancies().isEmpty)
        }
    }

    @Test("an answer that is not a success served nothing: its token estimate settles at the usage it reports, or at none; its request stays charged",
          arguments: [(400, #"{"error":{"message":"messages is required","type":"invalid_request_error"}}"#, 0),
                      (500, "Internal Server Error", 0),
                      (400, #"{"error":{"message":"too long"},"usage":{"total_tokens":12}}"#, 12)])
    func failureSettlesTheEstimate(status: Int, body: String, tokens: Int) async throws {
        let origin = try ScriptedHTTPServer { _ in .init(status: status, headers: [("Content-Type", "application/json")], body: body) }
        defer { origin.stop() }
        let harness = try Harness()
        var request = HTTPRequest(method: .post, url: URL(string: "\(origin.baseURL)/v1/chat/completions")!)
        request.headerFields[.contentType] = "application/json"
        let answer = try? await harness.gate.send(request, body: Data(#"{"model":"fake-1"}"#.utf8), endpoint: "chat")
        #expect(answer == nil || answer?.status.code == status)
        try await harness.gate.flush()
        #expect(try await harness.gate.quota.status(bucket: "tokens").unitsUsed == tokens)
        #expect(try await harness.gate.quota.status(bucket: "requests").unitsUsed == 1, "the attempt reached the server")
        #expect(try await harness.gate.quota.discrepancies().isEmpty)
        #expect(origin.requests.count == 1)
    }

    @Test("a stream dropped after two events closes the server's connection, and the estimate stands for what it never reported")
    func droppedStream() async throws {
        let llm = try await FakeLLMAPI.start(behaviour: FakeLLMBehaviour(
            requestsPerMinute: 500, tokensPerMinute: 30_000, streamEventInterval: .milliseconds(150)))
        try await withStopping(llm, stop: { await $0.stop() }) { llm in
            let harness = try Harness()
            let (request, body) = Self.chat(llm, maxTokens: 10)
            do {
                let answer = try await harness.gate.send(request, body: body, endpoint: "chat",
                                                         options: GateRequestOptions(streamsBodies: true))
                var iterator = try #require(answer.bodyStream).makeAsyncIterator()
                _ = try await iterator.next()
                _ = try await iterator.next()
            }
            try await harness.gate.flush()
            #expect(try await harness.gate.quota.status(bucket: "tokens").unitsUsed == 1_000)
            #expect(try await harness.gate.quota.discrepancies().isEmpty)
            // The server sees its client go at its next write.
            let deadline = Date().addingTimeInterval(3)
            while llm.streams.last?.closedByClientAt == nil, Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(llm.streams.last?.closedByClientAt != nil)
            #expect(llm.streams.last?.finishedAt == nil)
        }
    }
}
