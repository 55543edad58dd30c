import AsyncHTTPClient
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import Tollgate

/// A ``Tollgate/HTTPTransport`` over AsyncHTTPClient, for servers and tools built on SwiftNIO.
///
/// It sends the request's header fields exactly as given and returns the server's bytes and
/// header fields exactly as received: it adds no `Accept-Encoding`, decodes no
/// `Content-Encoding`, and follows no redirect (with ``sharedClient``, or any client configured
/// with `redirectConfiguration = .disallow` and `decompression = .disabled`). That makes it the
/// transport for a proxy that must pass answers through byte for byte.
///
/// An idempotent request (``resendableMethods``) whose connection closed before any answer is sent
/// again on another connection, once (``maximumResends``): a kept-alive connection that the
/// server's idle timeout ended just as it was reused (RFC 9112 §9.3.1).
public struct AsyncHTTPClientTransport: HTTPTransport {
    private let client: HTTPClient
    private let timeout: Duration
    private let maximumBodySize: Int

    /// A client shared by transports created without one. Unlike `HTTPClient.shared`, it follows
    /// no redirect (the gate decides, see ``Tollgate/RedirectPolicy``), never decompresses, and
    /// fails a request at once when the connection is refused instead of retrying until the
    /// timeout, so the circuit breaker sees an outage as it happens. It lives as long as the process.
    public static let sharedClient: HTTPClient = {
        HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: recommendedConfiguration)
    }()

    /// The configuration of ``sharedClient``, for callers who create their own client.
    public static var recommendedConfiguration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        // The request's deadline ends when the head arrives: a server that then stops sending
        // would otherwise hold a body (and a proxy's client) forever.
        configuration.timeout.read = .seconds(30)
        return configuration
    }

    /// A client of ``recommendedConfiguration`` that trusts `authorities` instead of the system's
    /// certificate authorities (an API behind a private CA). The caller owns it: shut it down
    /// (`try await client.shutdown()`) once no transport uses it.
    /// - Parameter authorities: The authorities to trust, such as
    ///   `try CertificateAuthorities(file: "ca.pem")`.
    /// - Returns: The client.
    public static func makeClient(trusting authorities: CertificateAuthorities) -> HTTPClient {
        HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                   configuration: authorities.applied(to: recommendedConfiguration))
    }

    /// Creates a transport.
    /// - Parameters:
    ///   - client: The client to send with; ``sharedClient`` by default. A client of your own
    ///     should start from ``recommendedConfiguration``: one that follows redirects itself would
    ///     carry the caller's credentials to whatever host a `Location` names.
    ///   - timeout: How long a request may take, 30 seconds by default.
    ///   - maximumBodySize: The largest response body accepted, 64 MiB by default; larger ones fail
    ///     with ``Tollgate/HTTPTransportError/responseTooLarge(limit:)``.
    public init(client: HTTPClient = AsyncHTTPClientTransport.sharedClient, timeout: Duration = .seconds(30), maximumBodySize: Int = 64 << 20) {
        self.client = client
        self.timeout = timeout
        self.maximumBodySize = maximumBodySize
    }

    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let response = try await execute(request, body: body)
        var buffer: ByteBuffer
        do {
            buffer = try await response.body.collect(upTo: maximumBodySize)
        } catch is NIOTooManyBytesError {
            throw HTTPTransportError.responseTooLarge(limit: maximumBodySize)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Self.transportError(for: error)
        }
        return (Self.head(of: response), Data(buffer.readableBytesView))
    }

    /// Returns a body over `limit` bytes as a stream read from the network as it is consumed, so
    /// an answer of any size passes through in constant memory; ``maximumBodySize`` does not apply
    /// to a streamed body.
    public func send(_ request: HTTPRequest, body: Data?, streamingPast limit: Int) async throws -> (HTTPResponse, HTTPResponseBody) {
        let response = try await execute(request, body: body)
        let reader = BodyReader(response.body.makeAsyncIterator())
        var collected = Data()
        do {
            while let chunk = try await reader.next() {
                collected.append(chunk)
                if collected.count > limit {
                    let first = ReadOnce(collected)
                    return (Self.head(of: response), .streaming(HTTPBodyStream {
                        if let first = first.take() { return first }
                        do {
                            return try await reader.next()
                        } catch is CancellationError {
                            throw CancellationError()
                        } catch {
                            throw Self.transportError(for: error)
                        }
                    }))
                }
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Self.transportError(for: error)
        }
        return (Self.head(of: response), .complete(collected))
    }

    /// Sends the request and waits for the response head.
    private func execute(_ request: HTTPRequest, body: Data?) async throws -> HTTPClientResponse {
        var request = request
        // The scheme is case-insensitive (RFC 3986 §3.1).
        request.scheme = request.scheme?.lowercased()
        guard let scheme = request.scheme, ["http", "https"].contains(scheme) else {
            throw HTTPTransportError.invalidRequest("the scheme '\(request.scheme ?? "")' is not http or https")
        }
        guard let url = request.url else {
            throw HTTPTransportError.invalidRequest("\(request.method) \(request.path ?? "") has no absolute URL")
        }
        var clientRequest = HTTPClientRequest(url: url.absoluteString)
        clientRequest.method = NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields {
            clientRequest.headers.add(name: field.name.rawName, value: field.value)
        }
        if let body {
            clientRequest.body = .bytes(ByteBuffer(bytes: body))
        }
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeout.timeInterval * 1e9))
        do {
            var resends = 0
            while true {
                do {
                    return try await client.execute(clientRequest, deadline: deadline)
                } catch where resends < Self.maximumResends && Self.resendableMethods.contains(request.method)
                    && Self.closedBeforeAnswer(error) {
                    // Most often a kept-alive connection whose idle timeout ended on the server just
                    // as the pool reused it: the request never reached the server (AsyncHTTPClient
                    // does not resend, its issue #715). RFC 9112 §9.3.1 lets a client send an
                    // idempotent request again, as curl, urllib3 and Go do; the pool has dropped the
                    // closed connection, so this goes on another.
                    resends += 1
                }
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Self.transportError(for: error)
        }
    }

    /// The methods RFC 9110 §9.2.2 calls idempotent: sent again when the server closed the
    /// connection before answering. Never a `POST` or `PATCH`, which the server may have acted on.
    public static let resendableMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace, .put, .delete]

    /// How many times one request is sent again after its connection closed before any answer.
    /// Once: the ledger charges the attempt once, and a server that read the request before it
    /// closed (rarer than an idle timeout) counts each send; a second closed connection in a row
    /// is left to the gate's retry policy, which charges each attempt.
    public static let maximumResends = 1

    /// Whether `error` says the connection closed before the answer's head: the server closed it
    /// (`remoteConnectionClosed`), the request was written to a connection already closed (`I/O
    /// on closed channel`), or the server reset it.
    static func closedBeforeAnswer(_ error: any Error) -> Bool {
        if let clientError = error as? HTTPClientError { return clientError == .remoteConnectionClosed }
        if let channelError = error as? ChannelError { return channelError == .ioOnClosedChannel }
        if let ioError = error as? IOError { return [ECONNRESET, EPIPE].contains(ioError.errnoCode) }
        return false
    }

    private static func head(of response: HTTPClientResponse) -> HTTPResponse {
        var fields = HTTPFields()
        for header in response.headers {
            if let name = HTTPField.Name(header.name) {
                fields.append(HTTPField(name: name, value: header.value))
            }
        }
        return HTTPResponse(status: .init(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
                            headerFields: fields)
    }

    /// Sorts AsyncHTTPClient's and NIO's errors by what they say of the request: refused before it
    /// left the machine, never connected, stopped at the TLS handshake, timed out, answered with
    /// something that is not HTTP, or lost on the way.
    static func transportError(for error: any Error) -> HTTPTransportError {
        if let tlsError = error as? NIOSSLError {
            switch tlsError {
            case .handshakeFailed, .unableToValidateCertificate, .noCertificateToValidate, .cannotMatchULabel,
                 .cannotFindPeerIP, .failedToLoadCertificate, .failedToLoadPrivateKey, .noSuchFilesystemObject:
                // The handshake did not complete, or the client's TLS configuration could not be
                // loaded for it: not a byte of the request was written.
                return .tlsFailure(String(describing: tlsError))
            default:
                // After the handshake (an unclean shutdown mid-answer…): the request may have arrived.
                return .connectionFailed(String(describing: tlsError))
            }
        }
        if error is NIOSSLExtraError {
            // The server's name does not match its certificate, or cannot be sent as SNI.
            return .tlsFailure(String(describing: error))
        }
        if error is HTTPParserError {
            // Too many header bytes, an invalid character, conflicting Content-Length or Transfer-Encoding.
            return .malformedResponse(String(describing: error))
        }
        if let clientError = error as? HTTPClientError {
            switch clientError {
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                return .timedOut
            case .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout:
                return .connectionRefused(String(describing: clientError))
            case .invalidURL, .emptyHost, .emptyScheme, .invalidHeaderFieldNames([]), .invalidHeaderFieldValues([]),
                 .traceRequestWithBody, .bodyLengthMismatch:
                return .invalidRequest(String(describing: clientError))
            default:
                let text = String(describing: clientError)
                if text.contains("unsupportedScheme") || text.contains("invalidHeaderField") {
                    return .invalidRequest(text)
                }
                return .connectionFailed(text)
            }
        }
        if error is NIOConnectionError {
            return .connectionRefused(String(describing: error))
        }
        if let ioError = error as? IOError, [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH].contains(ioError.errnoCode) {
            return .connectionRefused(String(describing: error))
        }
        // Reset, closed mid-answer: below HTTP, the circuit breaker's "network error".
        return .connectionFailed(String(describing: error))
    }
}

/// The response body's iterator, advanced by whichever task reads the body next.
///
/// `@unchecked Sendable`: the iterator is only ever advanced through ``next()``, and a body is read
/// by one task at a time — first the transport while it decides whether to stream, then the one
/// consumer of the `HTTPBodyStream` it returns, each `next()` awaited before the following one —
/// so no two accesses to `iterator` overlap.
private final class BodyReader: @unchecked Sendable {
    private var iterator: HTTPClientResponse.Body.AsyncIterator

    init(_ iterator: HTTPClientResponse.Body.AsyncIterator) {
        self.iterator = iterator
    }

    func next() async throws -> Data? {
        try await iterator.next().map { Data($0.readableBytesView) }
    }
}

/// A value handed out once, to whichever task asks first.
private final class ReadOnce: Sendable {
    private let value: Mutex<Data?>

    init(_ value: Data) {
        self.value = Mutex(value)
    }

    func take() -> Data? {
        value.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
