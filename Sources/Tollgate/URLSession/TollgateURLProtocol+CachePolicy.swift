import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension TollgateURLProtocol {
    /// The freshness `.returnCacheDataElseLoad` and `.returnCacheDataDontLoad` choose: any stored
    /// answer, however old (the cache's own retention still bounds what is stored).
    static let anyStoredAnswer = Duration.seconds(100 * 366 * 86_400)

    /// What a request's `URLRequest.CachePolicy` asks of the gate: the request as it is sent to the
    /// gate, and the options it goes with.
    /// - Parameters:
    ///   - cachePolicy: The request's cache policy.
    ///   - request: The request.
    /// - Returns: The request, with `Cache-Control: no-cache` for a reload or `only-if-cached` for
    ///   `.returnCacheDataDontLoad`, and the options (any stored answer is fresh for the two
    ///   `returnCacheData` policies).
    static func applying(
        _ cachePolicy: URLRequest.CachePolicy, to request: HTTPRequest
    ) -> (HTTPRequest, GateRequestOptions) {
        var request = request
        var options = GateRequestOptions()
        // Not a switch: the enum is frozen on Linux and not on Apple platforms, so no form of
        // `default` compiles without a warning on both.
        if cachePolicy == .returnCacheDataElseLoad {
            options.freshFor = anyStoredAnswer
        } else if cachePolicy == .returnCacheDataDontLoad {
            options.freshFor = anyStoredAnswer
            request.headerFields.append(HTTPField(name: .cacheControl, value: "only-if-cached"))
        } else if cachePolicy != .useProtocolCachePolicy {
            // The reloads: ask the server (a stored answer is revalidated).
            request.headerFields.append(HTTPField(name: .cacheControl, value: "no-cache"))
        }
        return (request, options)
    }
}
