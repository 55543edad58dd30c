import Foundation
import HTTPTypes
import Synchronization
import Tollgate

/// The upstream of a replay: every request is answered from the recording, as the server answered
/// that URL at that time.
///
/// | request | answer |
/// |---|---|
/// | a URL recorded with a body | the last answer recorded for it at or before the clock's time (the first one before that) |
/// | with `If-None-Match` naming that answer's entity tag, or `If-Modified-Since` not before its `Last-Modified` | `304`, its fields, no body |
/// | a URL recorded only as `304`s | `304` to a conditional request; otherwise as never recorded |
/// | a URL never recorded | `404`, counted in ``unrecordedRequests`` |
///
/// It never waits: a replay runs as fast as the gate decides.
public final class RecordedUpstream: HTTPTransport {
    /// The header every answer carries to say it came from the recording, not from a server.
    public static let unrecordedField = HTTPField.Name("X-Tollgate-Simulation")!

    private struct Answer: Sendable {
        let at: Date
        let status: Int
        let fields: HTTPFields
        let body: Data
    }

    private let answers: [String: [Answer]]
    private let clock: any TollgateClock
    private let counts = Mutex<(sent: Int, unrecorded: Int)>((0, 0))

    /// An upstream that answers from `exchanges`.
    /// - Parameters:
    ///   - exchanges: The recording.
    ///   - clock: The replay's clock: which recorded answer is current.
    public init(_ exchanges: [RecordedExchange], clock: any TollgateClock) {
        var answers: [String: [Answer]] = [:]
        for exchange in exchanges {
            answers[Self.key(exchange.request), default: []].append(Answer(
                at: exchange.startedAt, status: exchange.status, fields: exchange.responseFields, body: exchange.responseBody
            ))
        }
        self.answers = answers.mapValues { $0.sorted { $0.at < $1.at } }
        self.clock = clock
    }

    /// Requests that reached this upstream.
    public var sentRequests: Int { counts.withLock { $0.sent } }
    /// Requests for URLs the recording never answered.
    public var unrecordedRequests: Int { counts.withLock { $0.unrecorded } }

    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        counts.withLock { $0.sent += 1 }
        let recorded = answers[Self.key(request)] ?? []
        let conditional = ConditionalRequest.isConditional(request.headerFields)
        let now = clock.now()
        // Status 0: a request the recorder's gate answered itself (a refusal); no server's answer.
        let answered = recorded.filter { $0.status != 0 }
        let withBodies = answered.filter { $0.status != 304 }
        let candidates = withBodies.isEmpty && conditional ? answered : withBodies
        guard let answer = candidates.last(where: { $0.at <= now }) ?? candidates.first else {
            counts.withLock { $0.unrecorded += 1 }
            var fields = HTTPFields()
            fields[.contentType] = "application/json"
            fields[Self.unrecordedField] = "unrecorded"
            return (HTTPResponse(status: .notFound, headerFields: fields),
                    Data(#"{"error": "not in the recording"}"#.utf8))
        }
        // An origin compares a date with its Last-Modified alone.
        if answer.status == 304 || (answer.status == 200 && ConditionalRequest.holdsRepresentation(
            request.headerFields, tag: answer.fields[.eTag], modified: answer.fields[.lastModified]
        )) {
            var fields = answer.fields
            fields[.contentType] = nil
            return (HTTPResponse(status: .notModified, headerFields: fields), Data())
        }
        return (HTTPResponse(status: HTTPResponse.Status(code: answer.status), headerFields: answer.fields), answer.body)
    }

    /// Method and URL, as recorded and as the gate sends them.
    private static func key(_ request: HTTPRequest) -> String {
        "\(request.method.rawValue) \(request.scheme ?? "")://\(request.authority ?? "")\(request.path ?? "")"
    }
}
