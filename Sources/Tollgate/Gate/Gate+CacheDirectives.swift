import Foundation
import HTTPTypes
import Logging

extension Gate {
    /// How a stale response within its `stale-while-revalidate` window is revalidated.
    enum Revalidation: Sendable {
        /// Serve it at once and revalidate in a task of the gate's own (its own transport only:
        /// a per-request transport, such as the OpenAPI middleware's `next`, may not outlive the call).
        case inBackground
        /// Revalidate before answering, as for any stale response.
        case inline
        /// Send the request as the caller gave it, without looking the cache up.
        case bypassingCache
    }

    /// The caller sent no conditional field, the cache added some, and the server's `304` matched
    /// nothing stored (evicted meanwhile, or a variant tag that no longer fits): a `304` would mean
    /// nothing to the caller, so the request is sent once more as the caller gave it. Both sends are
    /// charged, as both reached the server.
    /// - Parameter totals: The first send's, which the resend's join when it fails.
    func resendUnconditionally(
        _ request: GateRequest, after notModified: GateResponse, _ totals: inout GateRequest.Totals
    ) async throws -> GateResponse {
        cacheLogger.debug("a 304 matched nothing stored; sending the request again without conditions",
                         metadata: ["gate.endpoint": "\(request.endpoint)"])
        var resend = request.again(revalidation: .bypassingCache, body: request.body)
        do {
            var answer = try await route(&resend)
            answer.unitsCharged += notModified.unitsCharged
            answer.attempts += notModified.attempts
            return answer
        } catch {
            // The resend's charges are the caller's too, failure or not.
            totals.charged(resend.totals.unitsCharged)
            totals.attempts += resend.totals.attempts
            throw error
        }
    }

    /// A stale response within its `stale-while-revalidate` window (RFC 5861 §3), answered at
    /// once; its revalidation runs in a task of the gate's own, one at a time per resource.
    func serveWhileRevalidating(_ request: GateRequest, lookup: CacheLookup) async -> GateResponse {
        guard case .revalidate(let cached, _) = lookup else { preconditionFailure("nothing stale to serve") }
        let http = request.request
        if let key = try? cache.key(for: http) {
            let resource = "\(key.resourceKey) \(CacheKey.variantKey(for: http, vary: VaryFields(cached.headerFields).names))"
            let revalidation = request.again(revalidation: .inline, body: nil)
            backgroundRevalidations.withLock { running in
                guard running[resource] == nil else { return }
                running[resource] = Task {
                    var revalidating = revalidation
                    do {
                        let answer = try await self.route(&revalidating)
                        // A streamed answer is stored, and settled, when it has been read to its end.
                        if let stream = answer.bodyStream {
                            for try await _ in stream {}
                        }
                    } catch {
                        self.cacheLogger.debug("background revalidation failed", metadata: [
                            "gate.endpoint": "\(revalidating.endpoint)", "error": "\(error)",
                        ])
                    }
                    _ = self.backgroundRevalidations.withLock { $0.removeValue(forKey: resource) }
                }
            }
        }
        cacheLogger.debug("served stale while revalidating", metadata: ["gate.endpoint": "\(request.endpoint)"])
        do {
            try await cache.recordStaleServe(cached, endpoint: request.endpoint)
        } catch {
            cacheLogger.warning("could not count a stale serve", metadata: ["error": "\(error)"])
        }
        return GateResponse(response: cached.response, body: cached.body, source: .stale(.revalidating),
                            unitsCharged: 0, attempts: 0, age: cached.age)
    }

    private var cacheLogger: Logger { cache.logger }
}
