import Foundation
import HTTPTypes
import HTTPTypesFoundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport over Foundation's `URLSession` (FoundationNetworking on Linux), with its own cache,
/// cookie store and redirect following turned off, so that every request the gate makes reaches
/// the server as written and every `3xx` comes back to the gate.
///
/// What URLSession still does on its own, and the gate cannot undo: it adds `Accept-Encoding`
/// (gzip, deflate) when the request has none and decodes such bodies, so the body returned is the
/// decoded one while `Content-Encoding` still names the coding; on Linux it adds
/// `Accept-Language` too. A tool that must pass bytes through unchanged (a proxy) uses
/// `AsyncHTTPClientTransport` from the `TollgateAsyncHTTPClient` product instead.
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
        self.session = URLSession(configuration: configuration, delegate: RedirectRefusal(), delegateQueue: nil)
        self.timeout = timeout
    }

    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        var request = request
        // The scheme is case-insensitive (RFC 3986 §3.1); URLSession refuses `HTTP://`.
        request.scheme = request.scheme?.lowercased()
        guard let scheme = request.scheme, ["http", "https"].contains(scheme) else {
            throw HTTPTransportError.invalidRequest("the scheme '\(request.scheme ?? "")' is not http or https")
        }
        guard var urlRequest = URLRequest(httpRequest: request) else {
            throw HTTPTransportError.invalidRequest("\(request.method) \(request.path ?? "") has no absolute URL")
        }
        if let body, !body.isEmpty, request.method == .get || request.method == .head {
            // FoundationNetworking drops or refuses such a body; the server would never see it.
            throw HTTPTransportError.invalidRequest("a \(request.method) request cannot carry a body through URLSession")
        }
        urlRequest.httpBody = body
        urlRequest.timeoutInterval = timeout.timeInterval
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch let error as URLError {
            throw Self.transportError(for: error)
        }
        guard let httpResponse = (response as? HTTPURLResponse)?.httpResponse else {
            throw HTTPTransportError.connectionFailed("the answer was not HTTP")
        }
        return (httpResponse, data)
    }

    /// Sorts URLSession's errors by what they say of the request: refused before it left the
    /// machine, never connected, stopped at the TLS handshake, answered with something that is not
    /// HTTP, or lost on the way.
    static func transportError(for error: URLError) -> HTTPTransportError {
        switch error.code {
        case .timedOut:
            .timedOut
        case .badURL, .unsupportedURL:
            .invalidRequest(error.localizedDescription)
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
            .connectionRefused(error.localizedDescription)
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected,
             .clientCertificateRequired:
            .tlsFailure(error.localizedDescription)
        case .cannotParseResponse:
            .malformedResponse(error.localizedDescription)
        case .unknown where isLibcurlTLSFailure(error.localizedDescription):
            .tlsFailure(error.localizedDescription)
        default:
            .connectionFailed(error.localizedDescription)
        }
    }

    /// FoundationNetworking reports libcurl's certificate and handshake failures
    /// (`CURLE_PEER_FAILED_VERIFICATION`, `CURLE_SSL_CONNECT_ERROR`) as `.unknown`, with libcurl's
    /// message as the description: those messages are all there is to tell them by.
    static func isLibcurlTLSFailure(_ message: String) -> Bool {
        ["SSL certificate problem", "SSL: no alternative certificate subject name", "SSL: certificate subject name",
         "SSL peer certificate", "SSL connect error", "SSL_connect", "TLS connect error"]
            .contains { message.hasPrefix($0) || message.contains($0) }
    }
}

/// Declines every redirect, so the `3xx` itself is the answer and the gate decides.
///
/// `@unchecked Sendable`: `NSObject` is not marked `Sendable`, but this subclass has no stored
/// state at all, so sharing it between threads cannot race.
private final class RedirectRefusal: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
