import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSessionConfiguration {
    /// A configuration whose sessions send every request through `gate`: one line puts an app that
    /// already talks to its API through `URLSession` behind the gate.
    ///
    /// ```swift
    /// let gate = try Gate(store: SQLiteStore(path: ledgerPath))
    /// let session = URLSession(configuration: .tollgated(by: gate))
    /// let (data, _) = try await session.data(from: videosURL)   // cached, throttled, charged
    /// ```
    ///
    /// The session's own URL cache is off: the gate is the cache. Requests to hosts outside
    /// `hosts` go to the network as `base` would send them. Background sessions cannot use this
    /// (the system runs their transfers outside the app): call ``Gate/send(_:body:endpoint:options:via:)``.
    /// - Parameters:
    ///   - gate: The gate every request goes through. It is held weakly: once released, the
    ///     session's requests go to the network without it.
    ///   - naming: How a request is named for the cost table, the circuit and the throttle; the
    ///     YouTube Data API v3's method names by default (`/youtube/v3/videos` → `videos.list`).
    ///   - hosts: The hosts this gate answers for; nil (the default) for every host. With several
    ///     gates in one process, name each one's hosts.
    ///   - base: The configuration to start from; `.default` by default.
    /// - Returns: A new configuration.
    public static func tollgated(
        by gate: Gate, naming: EndpointNaming = .youTubeDataAPIv3, hosts: Set<String>? = nil,
        base: URLSessionConfiguration = .default
    ) -> URLSessionConfiguration {
        TollgateRoutes.shared.register(gate, naming: naming, hosts: hosts)
        let configuration = base.copy() as? URLSessionConfiguration ?? .default
        configuration.protocolClasses = [TollgateURLProtocol.self] + (configuration.protocolClasses ?? [])
        configuration.urlCache = nil
        // The gate reads each request's cache policy (``TollgateURLProtocol``): by default, its own rules.
        configuration.requestCachePolicy = .useProtocolCachePolicy
        return configuration
    }
}
