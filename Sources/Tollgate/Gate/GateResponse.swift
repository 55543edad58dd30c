import Foundation
import HTTPTypes
import Synchronization

/// Where the gate's answer came from.
public enum ResponseSource: Sendable, Hashable, CustomStringConvertible {
    /// The server answered in full (a 200, or any status the gate does not serve from the cache).
    case network
    /// A stored response still fresh under its own `max-age`/`Expires`: nothing was sent.
    case cache
    /// A stored response past its own freshness but within the freshness the app chose
    /// (``GateConfiguration/freshFor``, ``GateRequestOptions/freshFor``, a URLSession cache policy):
    /// nothing was sent. Its `Age` says how old it is.
    case fresh
    /// The server answered `304 Not Modified` and the stored body was reused.
    case revalidated
    /// A stored response served because the gate would not, or could not, reach the server.
    case stale(StaleReason)
    /// The request said `Cache-Control: only-if-cached` and nothing stored could answer it: the
    /// answer is a `504 Gateway Timeout` made by the gate (RFC 9111 §5.2.1.7); nothing was sent.
    case notCached
    /// An identical request was already in flight (in this process or another on the same store):
    /// this one waited for its answer and got it from the cache; nothing was sent for it.
    case coalesced

    public var description: String {
        switch self {
        case .network: "network"
        case .cache: "cache"
        case .fresh: "fresh"
        case .revalidated: "revalidated"
        case .stale(let reason): "stale (\(reason.rawValue))"
        case .notCached: "not cached"
        case .coalesced: "coalesced"
        }
    }
}

/// Why a stored response was served stale.
public enum StaleReason: String, Sendable, Hashable {
    /// The endpoint's circuit is open.
    case circuitOpen
    /// The endpoint's throttle window is full.
    case throttled
    /// The day's quota is spent, by the ledger's count or by the server's word.
    case quotaExhausted
    /// The server failed (5xx, 429 after retries, timeout, connection error).
    case upstreamFailure
    /// It is within its `stale-while-revalidate` window (RFC 5861 §3): served at once while the
    /// gate revalidates it in the background.
    case revalidating
}

/// What ``Gate/send(_:body:endpoint:options:via:)`` returns: the answer, where it came from and
/// what it cost.
public struct GateResponse: Sendable {
    /// The response head. For a revalidated or stale answer, the stored response's head.
    public var response: HTTPResponse
    /// The response body.
    public var body: Data
    /// Where the answer came from.
    public var source: ResponseSource
    /// Quota units this request cost, net of refunds (a 304 costs nothing by default).
    public var unitsCharged: Int
    /// Requests sent to the server (0 when served from the cache or stale without trying).
    public var attempts: Int
    /// How old the stored response is, for cache, revalidated and stale answers.
    public var age: Duration?
    /// The body as it arrives, for an answer from the server when ``GateRequestOptions/streamsBodies``
    /// is on, or one larger than the cache's `maxBodySize` when ``GateRequestOptions/streamsLargeBodies``
    /// is; ``body`` is then empty. Read it to the end: the answer is stored (when it may be, and
    /// came whole within the cache's limits) and its cost settled when it ends. Dropping it before
    /// the end abandons the rest of the answer, closes the connection to the server and settles
    /// what the part read reported.
    public var bodyStream: HTTPBodyStream?
    /// The URLs of the redirects the gate followed to reach this answer, in order (empty when it
    /// followed none). The answer itself came from the last one.
    public var redirects: [URL] = []

    /// The response status.
    public var status: HTTPResponse.Status { response.status }

    /// The body as a sequence of chunks whatever its source: ``bodyStream`` when the answer is
    /// streamed, else ``body`` as one chunk (none when it is empty).
    public var bodyChunks: HTTPBodyStream {
        if let bodyStream { return bodyStream }
        let whole = WholeBody(body)
        return HTTPBodyStream { whole.take() }
    }
}

/// A body given out once, as the one chunk of ``GateResponse/bodyChunks``.
private final class WholeBody: Sendable {
    private let chunk: Mutex<Data?>

    init(_ body: Data) {
        chunk = Mutex(body.isEmpty ? nil : body)
    }

    func take() -> Data? {
        chunk.withLock { chunk in
            defer { chunk = nil }
            return chunk
        }
    }
}
