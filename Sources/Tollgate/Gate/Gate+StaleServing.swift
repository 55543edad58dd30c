import Foundation
import HTTPTypes
import Logging

extension Gate {
    /// The stored response, served instead of an answer the gate refused or could not get.
    /// - Parameters:
    ///   - stored: The stored response the machine knew could be served.
    ///   - reason: Why.
    ///   - request: The request.
    func serveStale(_ stored: CachedResponse?, reason: StaleReason, _ request: GateRequest) async -> GateResponse {
        guard let stored else { preconditionFailure("the machine served stale with nothing stored") }
        do {
            try await cache.recordStaleServe(stored, endpoint: request.endpoint)
        } catch {
            request.logger.warning("could not count a stale serve", metadata: ["error": "\(error)"])
        }
        request.logger.debug("serving stale response", metadata: [
            "gate.reason": "\(reason.rawValue)", "gate.age_seconds": "\(Int(stored.age.timeInterval))",
        ])
        return GateResponse(response: stored.response, body: stored.body, source: .stale(reason),
                            unitsCharged: request.totals.unitsCharged, attempts: request.totals.attempts,
                            age: stored.age)
    }

    /// The stored response when it may stand in for an answer the gate cannot get (see
    /// ``CachedResponse/mayServeStaleOnError(for:at:)``), judged when the request starts; nil when
    /// its directives forbid it, unless ``CacheConfiguration/servesStaleAgainstDirectives`` is on.
    func servableOnError(_ cached: CachedResponse, for request: HTTPRequest) -> CachedResponse? {
        if configuration.cache.servesStaleAgainstDirectives || cached.mayServeStaleOnError(for: request, at: cache.clock.now()) {
            return cached
        }
        cache.logger.debug("the stored response may not be served stale: its directives forbid it")
        return nil
    }
}
