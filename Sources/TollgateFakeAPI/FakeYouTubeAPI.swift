import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A real HTTP server on loopback that behaves like a quota-charging, ETag-serving API in the
/// style of the YouTube Data API v3.
///
/// Resources under `/youtube/v3/` answer JSON with an ETag that changes when the resource changes
/// (``modify(path:query:)`` or any write), `304 Not Modified` for a matching `If-None-Match`, and
/// Google's `403 quotaExceeded` once its daily quota is spent. Switches inject 429 storms, outages
/// and latency; ``receivedRequests`` shows what really went over the wire.
///
/// ```swift
/// let api = try await FakeYouTubeAPI.start()
/// defer { Task { await api.stop() } }
/// let url = api.baseURL.appending(path: "youtube/v3/videos").appending(queryItems: [.init(name: "id", value: "v1")])
/// ```
public final class FakeYouTubeAPI: Sendable {
    /// The port the operating system picked on 127.0.0.1.
    public let port: Int
    private let engine: FakeAPIEngine
    private let hold: AnswerHold
    private let services: ServiceGroup
    private let server: Mutex<Task<Void, any Error>?>

    /// `http://127.0.0.1:PORT`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    private init(port: Int, engine: FakeAPIEngine, hold: AnswerHold, services: ServiceGroup, server: Task<Void, any Error>) {
        self.port = port
        self.engine = engine
        self.hold = hold
        self.services = services
        self.server = Mutex(server)
    }

    /// Starts a server on 127.0.0.1, on a port the operating system picks.
    /// - Parameters:
    ///   - behaviour: The settings and faults to start with.
    ///   - logger: Where the server logs; the task's current logger by default.
    /// - Returns: The running server.
    /// - Throws: When the server cannot bind.
    public static func start(
        behaviour: FakeAPIBehaviour = FakeAPIBehaviour(), logger: Logger = Logger.current
    ) async throws -> FakeYouTubeAPI {
        let engine = FakeAPIEngine()
        engine.behaviour = behaviour
        let hold = AnswerHold()
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            responder: FakeAPIResponder(engine: engine, hold: hold),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "FakeYouTubeAPI"),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger
        )
        let services = ServiceGroup(configuration: .init(services: [application], logger: logger))
        let server = Task {
            defer { portContinuation.finish() }
            try await services.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            server.cancel()
            try await server.value
            throw FakeAPIError.couldNotStart
        }
        return FakeYouTubeAPI(port: port, engine: engine, hold: hold, services: services, server: server)
    }

    /// Stops the server and waits until it has closed its socket.
    public func stop() async {
        let task = server.withLock { task -> Task<Void, any Error>? in
            defer { task = nil }
            return task
        }
        hold.release(holding: false)
        // A graceful shutdown lets open connections finish instead of logging cancellations.
        await services.triggerGracefulShutdown()
        _ = try? await task?.value
    }

    /// The URL of a resource, such as `url("videos", ["id": "v1", "part": "snippet"])`.
    /// - Parameters:
    ///   - resource: The resource under `/youtube/v3/`.
    ///   - query: Query parameters.
    /// - Returns: The absolute URL.
    public func url(_ resource: String, _ query: KeyValuePairs<String, String> = [:]) -> URL {
        var components = URLComponents(url: baseURL.appending(path: "youtube/v3/\(resource)"), resolvingAgainstBaseURL: false)!
        if query.count > 0 {
            components.queryItems = query.map { URLQueryItem(name: $0.key, value: $0.value) }
        }
        return components.url!
    }

    /// The settings and faults in force.
    public var behaviour: FakeAPIBehaviour { engine.behaviour }

    /// Changes settings or faults while the server runs.
    /// - Parameter change: Edits the behaviour in place.
    public func updateBehaviour(_ change: (inout FakeAPIBehaviour) -> Void) {
        engine.updateBehaviour(change)
    }

    /// Every request received so far, oldest first.
    public var receivedRequests: [FakeAPIReceivedRequest] { engine.received }

    /// Holds every answer from now on: each request is received (``receivedRequests``) and
    /// answered, and the answer waits before it is sent, so the call stays on the wire until
    /// ``releaseHeldAnswers(holdingOn:)``.
    public func holdAnswers() { hold.start() }

    /// Sends the answers held now.
    /// - Parameter holdingOn: Whether later answers are held too; by default holding stops.
    public func releaseHeldAnswers(holdingOn: Bool = false) { hold.release(holding: holdingOn) }

    /// How many answers are held now.
    public var heldAnswerCount: Int { hold.count }

    /// Forgets the received requests.
    public func clearReceivedRequests() { engine.clearLog() }

    /// Units of the shared `youtube` bucket spent so far.
    public var unitsUsed: Int { engine.unitsUsed }

    /// Units of one of the fake's daily buckets spent so far: `youtube` (shared), `youtube.search`
    /// or `youtube.videos.insert`.
    /// - Parameter bucket: The bucket.
    /// - Returns: Units spent today.
    public func unitsUsed(bucket: String) -> Int { engine.unitsUsed(bucket: bucket) }

    /// Gives the fake's daily quota back, as its midnight would.
    public func resetQuota() { engine.resetQuota() }

    /// Changes a resource so that its ETag and body change.
    /// - Parameters:
    ///   - path: The path, such as `/youtube/v3/videos`.
    ///   - query: The query, such as `id=v1&part=snippet` (order and credentials do not matter).
    public func modify(path: String, query: String) {
        engine.modify(path: path, query: query)
    }
}

/// Why the fake API could not run.
public enum FakeAPIError: Error, Sendable, CustomStringConvertible {
    /// The server did not start listening.
    case couldNotStart

    public var description: String {
        switch self {
        case .couldNotStart: "The fake API could not start listening on 127.0.0.1."
        }
    }
}

/// Serves ``FakeAPIEngine``'s answers over Hummingbird.
struct FakeAPIResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    let engine: FakeAPIEngine
    let hold: AnswerHold

    func respond(to request: Request, context: Context) async throws -> Response {
        let latency = engine.behaviour.latency
        if latency > .zero {
            try await Task.sleep(for: latency)
        }
        var headers: [String: String] = [:]
        for field in request.headers {
            headers[field.name.canonicalName] = field.value
        }
        let answer = engine.answer(
            method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "", headers: headers
        )
        await hold.pass()
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        var body = answer.body
        if engine.behaviour.gzipsWhenAsked, !body.isEmpty, GzipEncoding.accepts(headers["accept-encoding"]) {
            body = GzipEncoding.gzipped(body)
            fields[.contentEncoding] = "gzip"
            fields[.vary] = "Accept-Encoding"
        }
        return Response(
            status: HTTPResponse.Status(code: answer.status),
            headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        )
    }
}
