import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `URLProtocol` that sends every request of a tollgated `URLSession` through a ``Gate``: cache,
/// 304s, circuit, throttle, quota and retries, with the gate's answer handed back to the session.
///
/// Register it through ``Foundation/URLSessionConfiguration/tollgated(by:naming:hosts:base:)``
/// rather than by hand:
///
/// ```swift
/// let session = URLSession(configuration: .tollgated(by: gate))
/// let (data, response) = try await session.data(from: videosURL)
/// (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-Tollgate-Source")  // "revalidated"
/// ```
///
/// A request's `cachePolicy` is the app's choice of freshness: `.returnCacheDataElseLoad` serves any
/// stored answer (source `fresh`) and asks the server only when nothing is stored;
/// `.returnCacheDataDontLoad` never sends (nothing stored fails the task with
/// `URLError.resourceUnavailable`); `.reloadIgnoringLocalCacheData` and the other reloads ask the
/// server (a stored answer is revalidated); `.useProtocolCachePolicy`, the default, follows the
/// gate's rules.
///
/// Every answer carries `X-Tollgate-Source`, `X-Tollgate-Units` and `X-Tollgate-Endpoint`, as the
/// proxy's do. A refusal (quota, open circuit, throttle) fails the task with a `URLError` whose
/// ``Foundation/URLError/tollgateError`` is the gate's typed error. The gate reaches the network
/// through its own transport (its own `URLSession`), never through a tollgated session again.
///
/// Background sessions (`URLSessionConfiguration.background(withIdentifier:)`) cannot use custom
/// protocols: the system runs their transfers outside the app. Call ``Gate/send(_:body:endpoint:options:via:)``
/// for that work instead.
public final class TollgateURLProtocol: URLProtocol {

    /// The key, in a failed task's `URLError.userInfo`, of the gate's own error.
    public static let gateErrorKey = "TollgateGateError"

    /// The task running this request through the gate, cancelled by `stopLoading`.
    private let exchange = Mutex<Task<Void, Never>?>(nil)

    override public class func canInit(with request: URLRequest) -> Bool {
        // Only sessions made with `tollgated(by:)` list this class; of their requests, those a
        // registered gate answers for.
        guard let scheme = request.url?.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return TollgateRoutes.shared.route(for: request.url) != nil
    }

    override public class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    override public func startLoading() {
        let urlRequest = request
        guard let route = TollgateRoutes.shared.route(for: urlRequest.url), let url = urlRequest.url,
              let httpRequest = urlRequest.httpRequest
        else {
            client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
            return
        }
        let body: Data?
        do {
            body = try Self.body(of: urlRequest)
        } catch {
            client?.urlProtocol(self, didFailWithError: URLError(.cannotDecodeRawData, userInfo: [
                NSLocalizedDescriptionKey: "the request body stream could not be read: \(error)",
            ]))
            return
        }
        if body == nil, task is URLSessionUploadTask {
            // FoundationNetworking keeps an upload task's body from its protocols: sending the
            // request without it would charge for a request that is not the caller's.
            client?.urlProtocol(self, didFailWithError: URLError(.requestBodyStreamExhausted, userInfo: [
                NSLocalizedDescriptionKey: "an upload task's body does not reach a URLProtocol here: "
                    + "set the request's httpBody and call data(for:) instead",
            ]))
            return
        }
        if let store = route.gate.storage as? SQLiteStore, store.isSuspended {
            // The app is suspended (its store too): nothing is admitted, whatever the gate's
            // ledger-failure policy, so that no request goes out uncharged meanwhile.
            let path = if case .file(let path) = store.location { path } else { ":memory:" }
            client?.urlProtocol(self, didFailWithError: Self.urlError(
                for: StoreError.suspended(path: path), endpoint: route.naming.endpoint(for: httpRequest)
            ))
            return
        }
        let endpoint = route.naming.endpoint(for: httpRequest)
        let (gateRequest, options) = Self.applying(urlRequest.cachePolicy, to: httpRequest)
        let loading = Loading(self)
        let task = Task {
            await TollgateURLProtocol.answer(loading, through: route, gateRequest, body: body, endpoint: endpoint, url: url,
                                             options: options)
        }
        exchange.withLock { $0 = task }
    }

    /// Sends the request through the gate and hands its answer, or its failure, to the client.
    private static func answer(
        _ loading: Loading, through route: TollgateRoutes.Route, _ request: HTTPRequest, body: Data?, endpoint: String,
        url: URL, options: GateRequestOptions
    ) async {
        let instance = loading.instance
        do {
            // An answer from the server comes as it arrives (over a transport that streams), and
            // reaches the task chunk by chunk (urlProtocol(_:didLoad:) per chunk).
            var options = options
            options.streamsBodies = true
            let answer = try await route.gate.send(request, body: body, endpoint: endpoint, options: options)
            try Task.checkCancellation()
            if answer.source == .notCached, CacheControl(request.headerFields).onlyIfCached {
                // `.returnCacheDataDontLoad` with nothing stored: nothing was sent, and the task fails
                // as URLSession's own cache would fail it.
                instance.client?.urlProtocol(instance, didFailWithError: URLError(.resourceUnavailable, userInfo: [
                    NSLocalizedDescriptionKey: "\(endpoint): nothing stored answers the request, and its cache policy forbids loading",
                ]))
                return
            }
            instance.deliver(answer, endpoint: endpoint, url: url)
        } catch is CancellationError {
            // stopLoading: the session no longer listens.
        } catch {
            instance.client?.urlProtocol(instance, didFailWithError: urlError(for: error, endpoint: endpoint))
        }
    }

    override public func stopLoading() {
        exchange.withLock { $0 }?.cancel()
    }

    private func deliver(_ answer: GateResponse, endpoint: String, url: URL) {
        var head = answer.response
        head.headerFields[TollgateHeaders.source] = answer.source.description
        head.headerFields[TollgateHeaders.units] = String(answer.unitsCharged)
        head.headerFields[TollgateHeaders.endpoint] = endpoint
        guard let response = HTTPURLResponse(httpResponse: head, url: url) else {
            client?.urlProtocol(self, didFailWithError: URLError(.badServerResponse))
            return
        }
        // The gate is the cache: the session keeps no second copy.
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        if let stream = answer.bodyStream {
            let loading = Loading(self)
            let task = Task {
                let instance = loading.instance
                do {
                    for try await chunk in stream { instance.client?.urlProtocol(instance, didLoad: chunk) }
                    instance.client?.urlProtocolDidFinishLoading(instance)
                } catch {
                    instance.client?.urlProtocol(instance, didFailWithError: URLError(.networkConnectionLost))
                }
            }
            exchange.withLock { $0 = task }
            return
        }
        if !answer.body.isEmpty { client?.urlProtocol(self, didLoad: answer.body) }
        client?.urlProtocolDidFinishLoading(self)
    }

    /// Carries the instance to the task that answers it.
    private struct Loading: @unchecked Sendable {
        // @unchecked Sendable: Foundation does not mark URLProtocol Sendable. The task only calls
        // the instance's client, whose callbacks the loading system serialises itself (FoundationNetworking
        // dispatches them to the session's delegate queue; Apple's loader takes them from any thread,
        // which OHHTTPStubs and Pulse rely on), and `exchange`, which is behind a Mutex.
        let instance: TollgateURLProtocol
        init(_ instance: TollgateURLProtocol) { self.instance = instance }
    }

    /// The request's body: `httpBody`, or everything its `httpBodyStream` holds (inside a
    /// URLProtocol, Apple's URLSession hands a body over as a stream).
    static func body(of request: URLRequest) throws -> Data? {
        if let body = request.httpBody { return body }
        guard let stream = request.httpBodyStream else { return nil }
        stream.open()
        defer { stream.close() }
        var body = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let read = stream.read(&buffer, maxLength: buffer.count)
            if read < 0 { throw stream.streamError ?? URLError(.cannotDecodeRawData) }
            if read == 0 { break }
            body.append(buffer, count: read)
        }
        return body
    }

    /// The `URLError` a failed task gets: its code says what kind of failure it was, and
    /// ``gateErrorKey`` holds the gate's own error.
    static func urlError(for error: any Error, endpoint: String) -> URLError {
        let code: URLError.Code = switch error {
        case is TollgateError, StoreError.suspended: .resourceUnavailable
        case HTTPTransportError.timedOut: .timedOut
        case HTTPTransportError.connectionRefused: .cannotConnectToHost
        case HTTPTransportError.tlsFailure: .secureConnectionFailed
        case HTTPTransportError.invalidRequest: .badURL
        case HTTPTransportError.malformedResponse: .cannotParseResponse
        case HTTPTransportError.responseTooLarge: .dataLengthExceedsMaximum
        case is HTTPTransportError: .networkConnectionLost
        default: .unknown
        }
        return URLError(code, userInfo: [
            gateErrorKey: error,
            NSUnderlyingErrorKey: error as NSError,
            NSLocalizedDescriptionKey: "\(endpoint): \(error)",
        ])
    }
}

extension URLError {
    /// The gate's own error behind a failed tollgated request (``TollgateError``,
    /// ``HTTPTransportError`` or a store's error), so that `catch` can tell a refusal apart.
    ///
    /// ```swift
    /// catch let error as URLError {
    ///     if case .quotaExceeded(_, _, _, let resetsAt) = error.tollgateError as? TollgateError { … }
    /// }
    /// ```
    public var tollgateError: (any Error)? {
        userInfo[TollgateURLProtocol.gateErrorKey] as? any Error
    }
}
