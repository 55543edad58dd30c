import Foundation
import HTTPTypes

/// How a response without explicit freshness may be given some (RFC 9111 §4.2.2).
struct HeuristicFreshness: Sendable, Hashable {
    /// The share of `Date − Last-Modified`; 0 turns heuristics off.
    var fraction: Double
    /// The longest lifetime a heuristic gives.
    var maximum: TimeInterval

    static let off = HeuristicFreshness(fraction: 0, maximum: 0)
}

/// A response's freshness as the cache computes it when the response arrives (RFC 9111 §4.2).
struct ResponseFreshness: Sendable, Hashable {
    /// The freshness lifetime in seconds (§4.2.1); 0 when the response has none.
    var lifetime: TimeInterval
    /// `corrected_initial_age` (§4.2.3): how old the response already was when it arrived.
    var initialAge: TimeInterval
    /// `response_time + lifetime − initial age`: the instant the response becomes stale, possibly
    /// already past; nil when it must be revalidated before every use (`no-cache`).
    var freshUntil: Date?
}

extension CacheHeaders {
    /// Statuses a cache may store, and give heuristic freshness, without explicit freshness
    /// (RFC 9110 §15.1). 206 is among them, but this cache does not store partial content.
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The freshness of a response received at `responseTime` for a request sent at `requestTime`.
    /// `cacheControl` is `fields`' `Cache-Control`, when the caller parsed it already.
    static func freshness(
        _ fields: HTTPFields, status: Int, requestTime: Date, responseTime: Date, heuristics: HeuristicFreshness,
        cacheControl parsed: CacheControl? = nil
    ) -> ResponseFreshness {
        let cacheControl = parsed ?? CacheControl(fields)
        let initialAge = initialAge(fields, requestTime: requestTime, responseTime: responseTime)
        guard !cacheControl.noCache else { return ResponseFreshness(lifetime: 0, initialAge: initialAge, freshUntil: nil) }
        let lifetime = lifetime(fields, cacheControl: cacheControl, status: status, responseTime: responseTime,
                                heuristics: heuristics)
        let until = responseTime.addingTimeInterval(min(lifetime, 100 * 365 * 86_400) - initialAge)
        return ResponseFreshness(lifetime: lifetime, initialAge: initialAge, freshUntil: until)
    }

    /// The freshness lifetime (§4.2.1): `max-age` (the lowest when repeated; invalid means 0), else
    /// `Expires − Date` (several `Expires` lines or an invalid date mean 0), else the heuristic for
    /// heuristically cacheable statuses with a `Last-Modified`. `s-maxage` is for shared caches.
    static func lifetime(
        _ fields: HTTPFields, cacheControl: CacheControl, status: Int, responseTime: Date, heuristics: HeuristicFreshness
    ) -> TimeInterval {
        switch cacheControl.maxAge {
        case .seconds(let seconds): return TimeInterval(seconds)
        case .invalid: return 0
        case nil: break
        }
        let expiresValues = fields[values: .expires]
        if !expiresValues.isEmpty {
            guard expiresValues.count == 1, let expires = HTTPDate.parse(expiresValues[0], now: responseTime) else { return 0 }
            return max(0, expires.timeIntervalSince(date(fields, now: responseTime) ?? responseTime))
        }
        guard heuristics.fraction > 0, heuristics.maximum > 0, heuristicallyCacheable.contains(status),
              let lastModifiedText = lastModified(fields),
              let lastModified = HTTPDate.parse(lastModifiedText, now: responseTime)
        else { return 0 }
        let base = date(fields, now: responseTime) ?? responseTime
        let interval = base.timeIntervalSince(lastModified)
        guard interval > 0 else { return 0 }
        return min(interval * heuristics.fraction, heuristics.maximum)
    }

    /// The `Date` of a response, when there is exactly one and it is valid.
    static func date(_ fields: HTTPFields, now: Date) -> Date? {
        let values = fields[values: .date]
        guard values.count == 1 else { return nil }
        return HTTPDate.parse(values[0], now: now)
    }

    /// The `Age` value (§5.1): the first member of a list-based value, a non-negative integer
    /// (2^31 when larger); nil, and so ignored, when that member is anything else.
    static func ageValue(_ fields: HTTPFields) -> Int64? {
        guard let first = fields[values: .age].first else { return nil }
        let member = first.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return CacheControl.deltaSeconds(String(member.trimmingOptionalWhitespace))
    }

    /// `corrected_initial_age` (§4.2.3): the larger of the apparent age (`response_time − Date`)
    /// and the `Age` value plus the response delay (`response_time − request_time`).
    static func initialAge(_ fields: HTTPFields, requestTime: Date, responseTime: Date) -> TimeInterval {
        let apparentAge = date(fields, now: responseTime).map { max(0, responseTime.timeIntervalSince($0)) } ?? 0
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedAgeValue = TimeInterval(ageValue(fields) ?? 0) + responseDelay
        return max(apparentAge, correctedAgeValue)
    }
}
