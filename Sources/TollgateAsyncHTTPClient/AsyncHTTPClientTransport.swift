import AsyncHTTPClient
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Tollgate

/// A ``Tollgate/HTTPTransport`` over AsyncHTTPClient, for servers and tools built on SwiftNIO.
///
/// It sends the request's header fields exactly as given and returns the server's bytes and
/// header fields exactly as received: it adds no `Accept-Encoding`, decodes no
/// `Content-Encoding`, and follows no redirect (with ``sharedClient``, or any client configured
/// with `redirectConfiguration = .disallow` and `decompression = .disabled`). That makes it the
/// transport for a proxy that must pass answers through byte for byte.
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
        return configuration
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
        let response: HTTPClientResponse
        var buffer: ByteBuffer
        do {
            response = try await client.execute(clientRequest, timeout: .nanoseconds(Int64(timeout.timeInterval * 1e9)))
            buffer = try await response.body.collect(upTo: maximumBodySize)
        } catch is NIOTooManyBytesError {
            throw HTTPTransportError.responseTooLarge(limit: maximumBodySize)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Self.transportError(for: error)
        }
        var fields = HTTPFields()
        for header in response.headers {
            if let name = HTTPField.Name(header.name) {
                fields.append(HTTPField(name: name, value: header.value))
            }
        }
        let head = HTTPResponse(status: .init(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
                                headerFields: fields)
        return (head, Data(buffer.readableBytesView))
    }

    /// Sorts AsyncHTTPClient's and NIO's errors by what they say of the request: refused before it
    /// left the machine, never connected, timed out, or lost on the way.
    static func transportError(for error: any Error) -> HTTPTransportError {
        if let clientError = error as? HTTPClientError {
            switch clientError {
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                return .timedOut
            case .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout:
                return .connectionRefused(String(describing: clientError))
            case .invalidURL, .emptyHost, .emptyScheme, .invalidHeaderFieldNames([]), .invalidHeaderFieldValues([]),
                 .traceRequestWithBody, .incompatibleHeaders, .bodyLengthMismatch:
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
