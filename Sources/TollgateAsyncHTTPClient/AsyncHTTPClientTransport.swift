import AsyncHTTPClient
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import NIOCore
import NIOHTTP1
import Tollgate

/// A ``Tollgate/HTTPTransport`` over AsyncHTTPClient, for servers and tools built on SwiftNIO.
public struct AsyncHTTPClientTransport: HTTPTransport {
    private let client: HTTPClient
    private let timeout: Duration
    private let maximumBodySize: Int

    /// A client shared by transports created without one. Unlike `HTTPClient.shared`, it fails a
    /// request at once when the connection is refused instead of retrying until the timeout, so
    /// the circuit breaker sees an outage as it happens. It lives as long as the process.
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Creates a transport.
    /// - Parameters:
    ///   - client: The client to send with; ``sharedClient`` by default.
    ///   - timeout: How long a request may take, 30 seconds by default.
    ///   - maximumBodySize: The largest response body accepted, 64 MiB by default; larger ones fail
    ///     with ``Tollgate/HTTPTransportError/responseTooLarge(limit:)``.
    public init(client: HTTPClient = AsyncHTTPClientTransport.sharedClient, timeout: Duration = .seconds(30), maximumBodySize: Int = 64 << 20) {
        self.client = client
        self.timeout = timeout
        self.maximumBodySize = maximumBodySize
    }

    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
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
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw HTTPTransportError.timedOut
        } catch is NIOTooManyBytesError {
            throw HTTPTransportError.responseTooLarge(limit: maximumBodySize)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // Connection refused, reset, DNS: below HTTP, all the circuit breaker's "network error".
            throw HTTPTransportError.connectionFailed(String(describing: error))
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
}
