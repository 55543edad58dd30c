import Foundation
import HTTPTypes

/// Reads an answer's actual cost (``QuotaConfiguration/ActualCost``) from its body as the body
/// passes, chunk by chunk, so a streamed answer is settled when it ends without being held whole.
///
/// - A `header` source is read from the answer's fields at once.
/// - A `body` source in a `text/event-stream` answer (server-sent events, as LLM APIs stream) is
///   looked for in each event's `data:` JSON, at its top level or in its `message`: the last event
///   that carries the path wins (OpenAI's `stream_options: {"include_usage": true}` sends
///   `usage.total_tokens` in the last event; an event whose `usage` is `null` does not count).
///   A sum of paths adds each path's last report (Anthropic: `usage.input_tokens` in
///   `message_start`'s message, `usage.output_tokens` counted up in `message_delta`).
///   `data: [DONE]` and comments are skipped.
/// - A `body` source in any other answer is read from the whole body at its end, kept up to
///   ``bodyLimit`` bytes (a longer body keeps the estimate).
///
/// A line longer than ``lineLimit`` is skipped, so a hostile stream cannot grow the reader.
struct StreamedCostReader: Sendable {
    /// The longest body kept to read a cost from at the end.
    static let bodyLimit = 4 << 20
    /// The longest event line (or event) read.
    static let lineLimit = 1 << 20

    private enum Mode: Sendable {
        case header(Int?)
        case events
        case body
    }

    private let rule: QuotaConfiguration.ActualCost
    private let fields: HTTPFields
    private let mode: Mode
    /// Events: the line being read. Body: the body so far.
    private var pending = Data()
    /// The current event's data lines, joined by line feeds.
    private var eventData = Data()
    private var eventHasData = false
    /// A line ended in CR: a LF that starts the next chunk ends nothing more.
    private var afterCarriageReturn = false
    /// The line being read, or the body, outgrew its limit.
    private var overflowed = false
    /// The paths whose numbers make the cost, in event streams.
    private let terms: [[String]]
    /// The last number each path's events reported.
    private var reported: [Int?]

    /// The cost the events reported so far: the sum of each path's last report; nil before any.
    var lastReported: Int? {
        guard reported.contains(where: { $0 != nil }) else { return nil }
        let sum = reported.reduce(0) { $0 + ($1 ?? 0) }
        return QuotaLimits.allowedUnits.contains(sum) ? sum : nil
    }

    /// Creates a reader for one answer.
    /// - Parameters:
    ///   - rule: Where the cost is.
    ///   - fields: The answer's fields.
    init(rule: QuotaConfiguration.ActualCost, fields: HTTPFields) {
        self.rule = rule
        self.fields = fields
        switch rule.source {
        case .header:
            mode = .header(rule.read(from: fields, body: nil))
            terms = []
        case .jsonBody(let path):
            mode = Self.isEventStream(fields) ? .events : .body
            terms = [path]
        case .jsonBodySum(let paths):
            mode = Self.isEventStream(fields) ? .events : .body
            terms = paths
        }
        reported = Array(repeating: nil, count: terms.count)
    }

    /// Whether the answer is a stream of server-sent events.
    static func isEventStream(_ fields: HTTPFields) -> Bool {
        guard let type = fields[.contentType] else { return false }
        return type.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "text/event-stream"
    }

    /// The cost in a body read whole: events when the answer is an event stream, else the rule's own reading.
    /// - Parameters:
    ///   - rule: Where the cost is.
    ///   - fields: The answer's fields.
    ///   - body: The whole body, if it was read.
    /// - Returns: The cost, or nil when the answer does not tell it.
    static func read(_ rule: QuotaConfiguration.ActualCost, fields: HTTPFields, body: Data?) -> Int? {
        if case .header = rule.source { return rule.read(from: fields, body: body) }
        guard isEventStream(fields), let body else { return rule.read(from: fields, body: body) }
        var reader = StreamedCostReader(rule: rule, fields: fields)
        reader.consume(body)
        return reader.finish()
    }

    /// Reads the next chunk of the body.
    mutating func consume(_ chunk: Data) {
        switch mode {
        case .header:
            return
        case .body:
            guard !overflowed else { return }
            if pending.count + chunk.count > Self.bodyLimit {
                overflowed = true
                pending = Data()
            } else {
                pending.append(chunk)
            }
        case .events:
            consumeEvents(chunk)
        }
    }

    /// The cost the body told, once it has ended (or been cut short): the header's, the last
    /// event's, or the whole body's. Nil when it told none.
    mutating func finish() -> Int? {
        switch mode {
        case .header(let units):
            return units
        case .body:
            return overflowed ? nil : rule.read(from: fields, body: pending)
        case .events:
            // An event not ended by a blank line is dispatched all the same: a stream cut short
            // may have said what it cost in it.
            if !pending.isEmpty { line(pending) }
            pending = Data()
            dispatch()
            return lastReported
        }
    }

    private mutating func consumeEvents(_ chunk: Data) {
        var start = chunk.startIndex
        var index = chunk.startIndex
        if afterCarriageReturn, index < chunk.endIndex, chunk[index] == UInt8(ascii: "\n") {
            index += 1
            start = index
        }
        afterCarriageReturn = false
        while index < chunk.endIndex {
            let byte = chunk[index]
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
                append(chunk[start..<index])
                let ended = pending
                pending = Data()
                if overflowed {
                    overflowed = false
                } else {
                    line(ended)
                }
                index += 1
                if byte == UInt8(ascii: "\r") {
                    if index < chunk.endIndex {
                        if chunk[index] == UInt8(ascii: "\n") { index += 1 }
                    } else {
                        afterCarriageReturn = true
                    }
                }
                start = index
            } else {
                index += 1
            }
        }
        append(chunk[start..<chunk.endIndex])
    }

    private mutating func append(_ bytes: Data) {
        guard !overflowed, !bytes.isEmpty else { return }
        if pending.count + bytes.count > Self.lineLimit {
            overflowed = true
            pending = Data()
        } else {
            pending.append(bytes)
        }
    }

    /// One line of the stream (the WHATWG event-stream format): a blank line ends the event; a
    /// `data` field adds to it; comments and other fields do not matter here.
    private mutating func line(_ line: Data) {
        if line.isEmpty {
            dispatch()
            return
        }
        guard line.first != UInt8(ascii: ":") else { return }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let name = colon.map { line[line.startIndex..<$0] } ?? line
        guard name.elementsEqual("data".utf8) else { return }
        var value = colon.map { line[line.index(after: $0)...] } ?? Data()
        if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        if eventHasData { eventData.append(UInt8(ascii: "\n")) }
        if eventData.count + value.count > Self.lineLimit {
            eventData = Data()
            eventHasData = false
            return
        }
        eventData.append(value)
        eventHasData = true
    }

    private mutating func dispatch() {
        defer {
            eventData = Data()
            eventHasData = false
        }
        guard eventHasData, eventData.first == UInt8(ascii: "{") else { return }
        for (index, path) in terms.enumerated() {
            let number = QuotaConfiguration.ActualCost(source: .jsonBody(path: path)).read(from: [:], body: eventData)
                ?? QuotaConfiguration.ActualCost(source: .jsonBody(path: ["message"] + path)).read(from: [:], body: eventData)
            if let number { reported[index] = number }
        }
    }
}
