import Foundation
import HTTPTypes
import Testing
@testable import Tollgate

/// An actual cost read from a body as it passes: server-sent events (the last usage wins), a
/// JSON body read whole at its end, a header at once.
@Suite("Actual costs read from streamed bodies")
struct StreamedCostReaderTests {
    static let tokens = QuotaConfiguration.ActualCost(bucket: "tokens", source: .jsonBody(path: ["usage", "total_tokens"]))
    static let events: HTTPFields = [.contentType: "text/event-stream; charset=utf-8"]

    /// OpenAI's stream with include_usage: usage null until the last event, then [DONE].
    static let openAIStream = """
        data: {"choices":[{"delta":{"role":"assistant","content":""}}],"usage":null}

        data: {"choices":[{"delta":{"content":"Hi"}}],"usage":null}

        : a comment

        data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":8,"total_tokens":15}}

        data: [DONE]


        """

    /// Reads `text` in chunks of `size` bytes.
    static func read(_ text: String, fields: HTTPFields = events, chunkSize size: Int) -> Int? {
        var reader = StreamedCostReader(rule: tokens, fields: fields)
        let bytes = Data(text.utf8)
        var start = 0
        while start < bytes.count {
            reader.consume(bytes.subdata(in: start..<min(bytes.count, start + size)))
            start += size
        }
        return reader.finish()
    }

    @Test("the usage in OpenAI's last event, however the stream is cut into chunks", arguments: [1, 2, 3, 7, 64, 4096])
    func openAIUsage(chunkSize: Int) {
        #expect(Self.read(Self.openAIStream, chunkSize: chunkSize) == 15)
        // CRLF and CR line ends are line ends too.
        #expect(Self.read(Self.openAIStream.replacingOccurrences(of: "\n", with: "\r\n"), chunkSize: chunkSize) == 15)
        #expect(Self.read(Self.openAIStream.replacingOccurrences(of: "\n", with: "\r"), chunkSize: chunkSize) == 15)
    }

    @Test("the last event that tells the cost wins; an event with a null or no usage does not count")
    func lastReportWins() {
        let stream = """
            data: {"usage":{"total_tokens":3}}

            data: {"usage":{"total_tokens":9}}

            data: {"usage":null}

            data:{"choices":[]}

            """
        #expect(Self.read(stream, chunkSize: 5) == 9)
    }

    @Test("a stream cut short: what it reported so far, the event it was writing included; nothing when it reported nothing")
    func cutShort() {
        #expect(Self.read("data: {\"usage\":{\"total_tokens\":4}}\n\ndata: {\"usage\":{\"total_tokens\":11}}", chunkSize: 8) == 11)
        #expect(Self.read("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"cho", chunkSize: 8) == nil)
    }

    @Test("a data field over several lines is one event; a line past the limit is skipped, not kept")
    func multiLineAndOverlong() {
        #expect(Self.read("data: {\"usage\":\ndata: {\"total_tokens\":21}}\n\n", chunkSize: 4) == 21)
        let long = "data: {\"pad\":\"" + String(repeating: "x", count: StreamedCostReader.lineLimit) + "\"}\n\n"
        #expect(Self.read(long + "data: {\"usage\":{\"total_tokens\":2}}\n\n", chunkSize: 65_536) == 2)
    }

    /// Anthropic's streamed message, as its Messages API sends it.
    static let anthropicStream = """
        event: message_start
        data: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":25,"output_tokens":1}}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}

        event: message_delta
        data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}

        event: message_stop
        data: {"type":"message_stop"}


        """

    @Test("Anthropic's stream: the input tokens of message_start's message and the last output tokens of message_delta, added")
    func anthropicSum() {
        let sum = QuotaConfiguration.ActualCost(
            bucket: "tokens", source: .jsonBodySum(paths: [["usage", "input_tokens"], ["usage", "output_tokens"]]))
        #expect(StreamedCostReader.read(sum, fields: Self.events, body: Data(Self.anthropicStream.utf8)) == 40)
        // Cut short after message_start: what it reported, 25 in and 1 out.
        let start = Self.anthropicStream.components(separatedBy: "\n\n")[0]
        #expect(StreamedCostReader.read(sum, fields: Self.events, body: Data(start.utf8)) == 26)
        // A body read whole: both parts are needed.
        let json: HTTPFields = [.contentType: "application/json"]
        #expect(sum.read(from: json, body: Data(#"{"usage":{"input_tokens":10,"output_tokens":32}}"#.utf8)) == 42)
        #expect(sum.read(from: json, body: Data(#"{"usage":{"input_tokens":10}}"#.utf8)) == nil)
        #expect(sum.source.description == "body usage.input_tokens + usage.output_tokens")
    }

    @Test("a JSON body is read whole at its end; a header at once; a buffered event stream the same way as a streamed one")
    func otherSources() {
        let json: HTTPFields = [.contentType: "application/json"]
        #expect(Self.read(#"{"usage":{"total_tokens":12}}"#, fields: json, chunkSize: 3) == 12)
        let header = QuotaConfiguration.ActualCost(source: .header(HTTPField.Name("x-usage-tokens")!))
        var reader = StreamedCostReader(rule: header, fields: [HTTPField.Name("x-usage-tokens")!: "17"])
        reader.consume(Data("anything".utf8))
        #expect(reader.finish() == 17)
        #expect(StreamedCostReader.read(Self.tokens, fields: Self.events, body: Data(Self.openAIStream.utf8)) == 15)
        #expect(StreamedCostReader.read(Self.tokens, fields: json, body: Data(#"{"usage":{"total_tokens":5}}"#.utf8)) == 5)
    }
}
