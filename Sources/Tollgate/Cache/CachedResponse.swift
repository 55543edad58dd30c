import Foundation
import HTTPTypes

/// A response the cache holds: what the server last sent, with its 304-merged headers.
public struct CachedResponse: Sendable, Hashable {
    /// The stored entry's id in the store.
    public let entryID: Int64
    /// The status of the stored response: any final status a private cache may store (RFC 9111 §3).
    public let status: HTTPResponse.Status
    /// The stored header fields, without secrets, `Set-Cookie` and hop-by-hop fields, with the stored
    /// `Date` as the server sent it and `Age` set to ``age`` (RFC 9111 §5.1).
    public let headerFields: HTTPFields
    /// The body.
    public let body: Data
    /// The entity tag, verbatim (weak or strong), if the server sent one.
    public let etag: String?
    /// The `Last-Modified` value, verbatim, if the server sent one.
    public let lastModified: String?
    /// When the response was stored.
    public let storedAt: Date
    /// When the server last confirmed it: stored or revalidated by a `304`.
    public let validatedAt: Date
    /// When it becomes stale under its own `max-age`, `Expires` or the heuristic (RFC 9111 §4.2),
    /// possibly before it was stored; nil when it must be revalidated before every use (`no-cache`).
    public let freshUntil: Date?
    /// Its current age when it was read (RFC 9111 §4.2.3): the age it had when it arrived (`Age`,
    /// `Date` and the response delay) plus the time it has been stored since it was last validated.
    public let age: Duration
    /// The age it had when it was stored or last revalidated.
    public let initialAge: Duration
    /// The stored entry it was read from, without its body: what a `304` revises.
    let metadata: CacheEntryMetadata

    /// The stored response as an `HTTPResponse`.
    public var response: HTTPResponse { HTTPResponse(status: status, headerFields: headerFields) }

    /// Whether it was still fresh when it was read.
    /// - Parameter now: The time to judge by.
    /// - Returns: True when `now` is before ``freshUntil``.
    public func isFresh(at now: Date) -> Bool {
        freshUntil.map { now < $0 } ?? false
    }

    init(entry: CacheEntry, now: Date) {
        self.init(entry: entry, now: now, fields: ServedHeaderFields(entry.metadata.headers))
    }

    /// - Parameter fields: The entry's fields, parsed (see ``ETagCache``'s memo of them).
    init(entry: CacheEntry, now: Date, fields: ServedHeaderFields) {
        let metadata = entry.metadata
        entryID = metadata.id
        status = HTTPResponse.Status(code: metadata.status)
        let currentAgeMs = max(0, metadata.initialAgeMs) + max(0, CacheTime.milliseconds(now) - metadata.validatedAtMs)
        headerFields = fields.fields(ageMilliseconds: currentAgeMs)
        body = entry.body
        etag = metadata.etag
        lastModified = metadata.lastModified
        storedAt = CacheTime.date(metadata.storedAtMs)
        validatedAt = CacheTime.date(metadata.validatedAtMs)
        freshUntil = metadata.freshUntilMs.map(CacheTime.date)
        age = .milliseconds(currentAgeMs)
        initialAge = .milliseconds(max(0, metadata.initialAgeMs))
        self.metadata = metadata
    }
}

/// What the cache says to do with a request.
public enum CacheLookup: Sendable, Hashable {
    /// A stored response still fresh: serve it, send nothing. Already counted as a hit.
    case fresh(CachedResponse)
    /// A stored response past its own freshness, but within the freshness the caller chose
    /// (``GateConfiguration/freshFor``): serve it, send nothing. Already counted as a hit.
    case chosenFresh(CachedResponse)
    /// A stored response that must be revalidated: send `conditionalRequest` (the request with
    /// `If-None-Match` or `If-Modified-Since`, or the request as it is when the stored response has
    /// no validator, so a full answer replaces it); a `304` goes to
    /// ``ETagCache/revalidated(_:for:endpoint:requestedAt:)``. The stored response can be served stale
    /// if the request cannot be sent, where its directives allow (see ``CachedResponse/mayServeStaleOnError(for:at:)``).
    case revalidate(CachedResponse, conditionalRequest: HTTPRequest)
    /// Nothing usable is stored: send the request, as it is or, when other variants of the resource
    /// are stored, with `If-None-Match` listing their entity tags (RFC 9111 §4.3.2) so that a `304`
    /// can select one.
    case miss(HTTPRequest)

    /// The request to send, or nil for a fresh hit.
    public var requestToSend: HTTPRequest? {
        switch self {
        case .fresh, .chosenFresh: nil
        case .revalidate(_, let request), .miss(let request): request
        }
    }

    /// The stored response, fresh or not.
    public var cachedResponse: CachedResponse? {
        switch self {
        case .fresh(let cached), .chosenFresh(let cached), .revalidate(let cached, _): cached
        case .miss: nil
        }
    }
}

/// Conversions between `Date` and the store's integer milliseconds.
enum CacheTime {
    /// Milliseconds since 1970, as the store keeps times.
    static func milliseconds(_ date: Date) -> Int64 { date.millisecondsSince1970 }

    static func date(_ milliseconds: Int64) -> Date { Date(millisecondsSince1970: milliseconds) }

    /// Saturating: a configured lifetime of centuries is "forever", not a trap.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflowAdding) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return overflowAdding ? (whole < 0 ? .min : .max) : total
    }
}
