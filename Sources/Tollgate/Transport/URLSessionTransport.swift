import Foundation
import HTTPTypes
import HTTPTypesFoundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport over Foundation's `URLSession` (FoundationNetworking on Linux), with its own cache
/// turned off so that every conditional request the gate makes reaches the server as written.
public struct URLSessionTransport: HTTPTransport {
    private let session: URLSession
    private let timeout: Duration

    /// Creates a transport.
    /// - Parameter timeout: How long a request may take before it fails with
    ///   ``HTTPTransportError/timedOut``. 30 seconds by default.
    public init(timeout: Duration = .seconds(30)) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.timeoutIntervalForRequest = timeout.timeInterval
        self.session = URLSession(configuration: configuration)
        self.timeout = timeout
    }

    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        guard var urlRequest = URLRequest(httpRequest: request) else {
            throw HTTPTransportError.invalidRequest("\(request.method) \(request.path ?? "") has no absolute URL")
        }
        urlRequest.httpBody = body
        urlRequest.timeoutInterval = timeout.timeInterval
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch let error as URLError {
            throw error.code == .timedOut
                ? HTTPTransportError.timedOut
                : HTTPTransportError.connectionFailed(error.localizedDescription)
        }
        guard let httpResponse = (response as? HTTPURLResponse)?.httpResponse else {
            throw HTTPTransportError.connectionFailed("the answer was not HTTP")
        }
        return (httpResponse, data)
    }
}
