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
    func resendUnconditionally(
        _ request: HTTPRequest, body: Data?, after notModified: GateResponse, endpoint: String,
        options: GateRequestOptions, via transport: any HTTPTransport, ledger: inout AttemptLedger
    ) async throws -> GateResponse {
        cacheLogger.info("a 304 matched nothing stored; sending the request again without conditions",
                         metadata: ["gate.endpoint": "\(endpoint)"])
        var resendLedger = AttemptLedger()
        do {
            var answer = try await route(request, body: body, endpoint: endpoint, options: options, via: transport,
                                         revalidation: .bypassingCache, ledger: &resendLedger)
            answer.unitsCharged += notModified.unitsCharged
            answer.attempts += notModified.attempts
            return answer
        } catch {
            // The resend's charges are the caller's too, failure or not.
            ledger.charged(resendLedger.unitsCharged)
            ledger.attempts += resendLedger.attempts
            throw error
        }
    }

    /// Answers that need no request: a `504` for `only-if-cached` when nothing stored fits (RFC 9111
    /// §5.2.1.7), and a stale response within its `stale-while-revalidate` window (RFC 5861 §3),
    /// whose revalidation then runs in the background. Nil when the request must be sent.
    func answerWithoutSending(
        _ request: HTTPRequest, lookup: CacheLookup, endpoint: String, options: GateRequestOptions,
        via transport: any HTTPTransport, revalidation: Revalidation
    ) async -> GateResponse? {
        if RequestDirectives(request.headerFields).onlyIfCached {
            return GateResponse(response: HTTPResponse(status: .gatewayTimeout), body: Data(), source: .notCached,
                                unitsCharged: 0, attempts: 0, age: nil)
        }
        guard revalidation == .inBackground, options.allowsStale, case .revalidate(let cached, _) = lookup,
              configuration.cache.servesFresh(for: endpoint), cached.isWithinStaleWhileRevalidate(at: cache.clock.now()),
              let key = try? cache.key(for: request)
        else { return nil }
        let resource = "\(key.resourceKey) \(CacheKey.variantKey(for: request, vary: VaryFields(cached.headerFields).names))"
        backgroundRevalidations.withLock { running in
            guard running[resource] == nil else { return }
            running[resource] = Task {
                do {
                    var ledger = AttemptLedger()
                    _ = try await self.route(request, body: nil, endpoint: endpoint, options: options, via: transport,
                                             revalidation: .inline, ledger: &ledger)
                } catch {
                    self.cacheLogger.info("background revalidation failed", metadata: [
                        "gate.endpoint": "\(endpoint)", "error": "\(error)",
                    ])
                }
                _ = self.backgroundRevalidations.withLock { $0.removeValue(forKey: resource) }
            }
        }
        cacheLogger.debug("served stale while revalidating", metadata: ["gate.endpoint": "\(endpoint)"])
        do {
            try await cache.recordStaleServe(cached, endpoint: endpoint)
        } catch {
            cacheLogger.warning("could not count a stale serve", metadata: ["error": "\(error)"])
        }
        return GateResponse(response: cached.response, body: cached.body, source: .stale(.revalidating),
                            unitsCharged: 0, attempts: 0, age: cached.age)
    }

    /// The stored response when it may stand in for an answer the gate cannot get (see
    /// ``CachedResponse/mayServeStaleOnError(for:at:)``), judged when the request starts; nil when
    /// its directives forbid it, unless ``CacheConfiguration/servesStaleAgainstDirectives`` is on.
    func servableOnError(_ cached: CachedResponse, for request: HTTPRequest) -> CachedResponse? {
        if configuration.cache.servesStaleAgainstDirectives || cached.mayServeStaleOnError(for: request, at: cache.clock.now()) {
            return cached
        }
        cacheLogger.debug("the stored response may not be served stale: its directives forbid it")
        return nil
    }

    private var cacheLogger: Logger { cache.logger }
}
