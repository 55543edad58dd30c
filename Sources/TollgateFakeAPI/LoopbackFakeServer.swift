import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// One request as a fake engine sees it: no networking types.
struct FakeHTTPRequest: Sendable {
    /// The method, such as `GET`.
    var method: String
    /// The path without the query.
    var path: String
    /// The query without `?`, empty when there is none.
    var query: String
    /// Every header field, lowercased names; repeated fields joined with `, `.
    var headers: [String: String]
    /// The body bytes, empty when there is none.
    var body: Data
}

/// One answer from a fake engine: status, header fields in order, body bytes — and, for a
/// streamed answer, chunks sent after the body, one at a time.
struct FakeHTTPAnswer: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: Data
    var stream: FakeHTTPStream? = nil
}

/// A body sent in chunks over time, as a streaming API sends server-sent events: no length, each
/// chunk flushed on its own, `interval` apart (real time: the client under test measures it).
struct FakeHTTPStream: Sendable {
    /// What happened to the stream, as the server saw it.
    enum Progress: Sendable {
        /// Chunk `index` (from 0) was written.
        case sent(index: Int, at: Date)
        /// Every chunk was written.
        case finished(at: Date)
        /// The client closed the connection (or it failed) before the last chunk.
        case closedByClient(at: Date, afterChunks: Int)
    }

    var chunks: [Data]
    var interval: Duration
    var progress: @Sendable (Progress) -> Void
}

/// The HTTP half that ``FakeGitHubAPI`` and ``FakeLLMAPI`` share: a Hummingbird server on
/// 127.0.0.1 on a port the operating system picks, handing every request to a synchronous engine.
final class LoopbackFakeServer: Sendable {
    /// The port the operating system picked.
    let port: Int
    private let services: ServiceGroup
    private let server: Mutex<Task<Void, any Error>?>

    private init(port: Int, services: ServiceGroup, server: Task<Void, any Error>) {
        self.port = port
        self.services = services
        self.server = Mutex(server)
    }

    /// Starts listening.
    /// - Parameters:
    ///   - serverName: The `Server` header.
    ///   - maximumBodySize: Larger request bodies are refused by the responder with a 413.
    ///   - logger: Where Hummingbird logs.
    ///   - answer: The engine: answers one request.
    /// - Returns: The running server.
    /// - Throws: ``FakeAPIError/couldNotStart`` when the server cannot bind.
    static func start(
        serverName: String, maximumBodySize: Int = 1 << 20, logger: Logger,
        answer: @escaping @Sendable (FakeHTTPRequest) -> FakeHTTPAnswer
    ) async throws -> LoopbackFakeServer {
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            responder: ClosureResponder(maximumBodySize: maximumBodySize, answer: answer),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: serverName),
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
            _ = try? await server.value
            throw FakeAPIError.couldNotStart
        }
        return LoopbackFakeServer(port: port, services: services, server: server)
    }

    /// Stops the server and waits until it has closed its socket. A second call does nothing.
    func stop() async {
        let task = server.withLock { task -> Task<Void, any Error>? in
            defer { task = nil }
            return task
        }
        guard let task else { return }
        // A graceful shutdown lets open connections finish instead of logging cancellations.
        await services.triggerGracefulShutdown()
        _ = try? await task.value
    }
}

/// Collects a Hummingbird request into a ``FakeHTTPRequest`` and serves the engine's answer.
private struct ClosureResponder: HTTPResponder {
    typealias Context = FakeRequestContext
    let maximumBodySize: Int
    let answer: @Sendable (FakeHTTPRequest) -> FakeHTTPAnswer

    func respond(to request: Request, context: Context) async throws -> Response {
        var headers: [String: String] = [:]
        for field in request.headers {
            let name = field.name.canonicalName
            headers[name] = headers[name].map { "\($0), \(field.value)" } ?? field.value
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: maximumBodySize)
        } catch {
            return Response(status: .contentTooLarge)
        }
        let answer = answer(FakeHTTPRequest(
            method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "",
            headers: headers, body: Data(body.readableBytesView)
        ))
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        guard let stream = answer.stream else {
            return Response(
                status: HTTPResponse.Status(code: answer.status),
                headers: fields,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body))
            )
        }
        let closed = StreamClosure(stream.progress)
        // The client closing its end before the last chunk is seen at once, not only at the next
        // write: its end of input closes the connection (no half-closure for a stream).
        _ = context.channel.setOption(ChannelOptions.allowRemoteHalfClosure, value: false)
        context.channel.closeFuture.whenComplete { _ in closed.report(sent: nil) }
        return Response(status: HTTPResponse.Status(code: answer.status), headers: fields, body: ResponseBody { writer in
            if !answer.body.isEmpty { try await writer.write(ByteBuffer(bytes: answer.body)) }
            for (index, chunk) in stream.chunks.enumerated() {
                if index > 0 { try await Task.sleep(for: stream.interval) }
                do {
                    try await writer.write(ByteBuffer(bytes: chunk))
                } catch {
                    closed.report(sent: index)
                    throw error
                }
                closed.sent(index)
            }
            closed.finish()
            try await writer.finish(nil)
        })
    }
}

/// A streamed answer's progress, reported once per event: the end, or the client's going first.
private final class StreamClosure: Sendable {
    private struct State {
        var sent = 0
        var over = false
    }

    private let progress: @Sendable (FakeHTTPStream.Progress) -> Void
    private let state = Mutex(State())

    init(_ progress: @escaping @Sendable (FakeHTTPStream.Progress) -> Void) {
        self.progress = progress
    }

    func sent(_ index: Int) {
        state.withLock { $0.sent = index + 1 }
        progress(.sent(index: index, at: Date()))
    }

    func finish() {
        let first = state.withLock { state -> Bool in
            defer { state.over = true }
            return !state.over
        }
        if first { progress(.finished(at: Date())) }
    }

    /// The client went (the connection closed, or a write failed) after `sent` chunks.
    func report(sent: Int?) {
        let count = state.withLock { state -> Int? in
            guard !state.over else { return nil }
            state.over = true
            return sent ?? state.sent
        }
        if let count { progress(.closedByClient(at: Date(), afterChunks: count)) }
    }
}

/// Hummingbird's basic request context, plus the client's channel, so that a streamed answer
/// sees its client go.
struct FakeRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The client's connection.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// FNV-1a, 64 bits: stable across runs and processes, unlike `Hasher`. The fakes' entity tags.
enum FNV1a {
    /// The hash of `bytes`.
    static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}
