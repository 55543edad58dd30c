import Foundation
import HTTPTypes
import Synchronization

/// A response body too large to hold in memory, read chunk by chunk as the reader asks for it
/// (the transport reads from the network only as fast as the chunks are taken).
///
/// It can be iterated once, by one task. Dropping it without reading to the end abandons the rest
/// of the answer (the transport closes the connection).
public struct HTTPBodyStream: AsyncSequence, Sendable {
    public typealias Element = Data

    private let nextChunk: @Sendable () async throws -> Data?

    /// Creates a stream that pulls its chunks from a function.
    /// - Parameter nextChunk: Returns the next chunk, or nil at the end of the body.
    public init(nextChunk: @escaping @Sendable () async throws -> Data?) {
        self.nextChunk = nextChunk
    }

    /// Reads the chunks in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let nextChunk: @Sendable () async throws -> Data?

        public mutating func next() async throws -> Data? {
            try await nextChunk()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(nextChunk: nextChunk)
    }
}

/// A response body as a transport returns it: whole, or, past a size, the first bytes and a
/// stream of the rest.
public enum HTTPResponseBody: Sendable {
    /// The whole body.
    case complete(Data)
    /// A body larger than the size asked for, from its first byte, as it arrives.
    case streaming(HTTPBodyStream)
}

extension HTTPTransport {
    /// Sends the request and returns the whole body: a transport that cannot stream never does.
    /// - Parameters:
    ///   - request: The request.
    ///   - body: The request body, if any.
    ///   - limit: Ignored here; see the requirement.
    /// - Returns: The response head and its whole body.
    /// - Throws: ``HTTPTransportError``.
    public func send(_ request: HTTPRequest, body: Data?, streamingPast limit: Int) async throws -> (HTTPResponse, HTTPResponseBody) {
        let (response, data) = try await send(request, body: body)
        return (response, .complete(data))
    }
}

extension HTTPBodyStream {
    /// The body whole when it ends within `limit` bytes; else what was read and the rest as one
    /// stream, from the first byte, so nothing is lost.
    /// - Parameter limit: The largest body read whole, in bytes.
    /// - Returns: ``HTTPResponseBody/complete(_:)`` or ``HTTPResponseBody/streaming(_:)``.
    /// - Throws: The stream's error.
    public func collected(upTo limit: Int) async throws -> HTTPResponseBody {
        var iterator = makeAsyncIterator()
        var collected = Data()
        while let chunk = try await iterator.next() {
            collected.append(chunk)
            if collected.count > limit {
                let first = Mutex<Data?>(collected)
                return .streaming(HTTPBodyStream {
                    if let bytes = first.withLock({ bytes -> Data? in defer { bytes = nil }; return bytes }) { return bytes }
                    // An iterator of this stream reads where the last one stopped: it pulls from one source.
                    var rest = makeAsyncIterator()
                    return try await rest.next()
                })
            }
        }
        return .complete(collected)
    }
}
