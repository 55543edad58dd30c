import Foundation
import HTTPTypes

/// What a request's own `Cache-Control` (and `Pragma`) asks of the cache (RFC 9111 §5.2.1).
struct RequestDirectives: Sendable, Hashable {
    let cacheControl: CacheControl
    /// `no-cache`, or `Pragma: no-cache` without `Cache-Control` (§5.4).
    let noCache: Bool

    init(_ fields: HTTPFields) {
        cacheControl = CacheControl(fields)
        noCache = cacheControl.noCache || CacheHeaders.requestPragmaNoCache(fields)
    }

    var onlyIfCached: Bool { cacheControl.onlyIfCached }
}

extension CachedResponse {
    /// The stored response's own `Cache-Control`.
    var directives: CacheControl { CacheControl(headerFields) }

    /// How long it has been stale at `now`, in seconds: negative while fresh; infinite when it has
    /// no freshness at all.
    func staleness(at now: Date) -> TimeInterval {
        freshUntil.map { now.timeIntervalSince($0) } ?? .infinity
    }

    /// Whether it may answer a request without the server (RFC 9111 §4.2, §5.2.1): never with
    /// `no-cache` on either side (a `no-cache` response is stored with no freshness); within the request's `max-age` and `min-fresh`; fresh, or stale
    /// within the request's `max-stale` unless `must-revalidate` or `proxy-revalidate` forbid it.
    func satisfies(_ request: RequestDirectives, at now: Date) -> Bool {
        // No freshness at all is how `no-cache` responses are stored: the fresh path, the hot one,
        // need not parse the stored directives.
        guard let freshUntil, !request.noCache else { return false }
        if let maxAge = request.cacheControl.maxAge {
            guard let seconds = maxAge.value, age.timeInterval <= TimeInterval(seconds) else { return false }
        }
        if let minFresh = request.cacheControl.minFresh {
            guard let seconds = minFresh.value, freshUntil.timeIntervalSince(now) >= TimeInterval(seconds) else {
                return false
            }
        }
        if now < freshUntil { return true }
        let response = directives
        guard !response.noCache, !response.mustRevalidate, !response.proxyRevalidate else { return false }
        switch request.cacheControl.maxStale {
        case .any: return true
        case .seconds(let seconds): return staleness(at: now) <= TimeInterval(seconds)
        case .invalid, nil: return false
        }
    }

    /// Whether it may answer a request without the server under the freshness the caller chose: less
    /// than `freshFor` has passed since it was stored or last revalidated, whatever its own
    /// directives say, and the request says neither `no-cache` nor a `max-age` its age exceeds.
    /// (A `no-store` answer is never stored, so it never comes here.)
    func isWithin(chosenFreshness freshFor: Duration, for request: RequestDirectives, at now: Date) -> Bool {
        guard !request.noCache, now.timeIntervalSince(validatedAt) < freshFor.timeInterval else { return false }
        if let maxAge = request.cacheControl.maxAge {
            guard let seconds = maxAge.value, age.timeInterval <= TimeInterval(seconds) else { return false }
        }
        return true
    }

    /// Whether it may be served in place of an answer the gate could not get: an open circuit, a
    /// spent quota, a full throttle, a failing or unreachable server (RFC 9111 §4.2.4, RFC 5861 §4).
    ///
    /// A fresh response may always be. A stale one may not when it says `no-cache`,
    /// `must-revalidate` or `proxy-revalidate` (this cache can answer several clients through
    /// `tollgate proxy`, so it honours the shared-cache directive too), nor beyond a `stale-if-error`
    /// limit of the response or the request. Without any of these, it may be, however stale: serving
    /// the last answer when the quota is spent is what Tollgate is for; the cache's own retention
    /// (``CacheConfiguration/maxAge``) bounds it.
    /// - Parameters:
    ///   - request: The request it would answer.
    ///   - now: The time to judge by.
    /// - Returns: True when serving it is allowed.
    public func mayServeStaleOnError(for request: HTTPRequest, at now: Date) -> Bool {
        let response = directives
        guard !response.noCache else { return false }
        let staleness = staleness(at: now)
        if staleness < 0 { return true }
        guard !response.mustRevalidate, !response.proxyRevalidate else { return false }
        for limit in [response.staleIfError, CacheControl(request.headerFields).staleIfError] {
            guard let limit else { continue }
            guard let seconds = limit.value, staleness <= TimeInterval(seconds) else { return false }
        }
        return true
    }

    /// Whether it is stale but within its `stale-while-revalidate` window (RFC 5861 §3) at `now`,
    /// so it may be served while a revalidation runs in the background.
    func isWithinStaleWhileRevalidate(at now: Date) -> Bool {
        let response = directives
        guard !response.noCache, !response.mustRevalidate, !response.proxyRevalidate,
              let seconds = response.staleWhileRevalidate?.value
        else { return false }
        let staleness = staleness(at: now)
        return staleness >= 0 && staleness <= TimeInterval(seconds)
    }
}
