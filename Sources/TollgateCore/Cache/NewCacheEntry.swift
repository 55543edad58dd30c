import Foundation

/// A response to store, or to put in place of the entry with the same resource and variant keys.
public struct NewCacheEntry: Sendable, Hashable {
    /// Digest of the method, the normalised URL and the credential partition.
    public var resourceKey: String
    /// Digest of the request's values for the headers that `vary` names; empty when none.
    public var variantKey: String
    /// The endpoint, as the gate names it.
    public var endpoint: String
    /// The request method.
    public var method: String
    /// The normalised URL with every secret replaced by a marker.
    public var url: String
    /// The normalised `Vary` field names, comma-separated; nil when none. Other variants of the
    /// same resource stored under a different `Vary` are removed when this one is stored.
    public var vary: String?
    /// The status code.
    public var status: Int
    /// The header fields, without secrets and `Set-Cookie`.
    public var headers: [CacheHeaderField]
    /// The entity tag, verbatim.
    public var etag: String?
    /// The `Last-Modified` value, verbatim.
    public var lastModified: String?
    /// When the response becomes stale (possibly already past); nil when it must always be revalidated.
    public var freshUntilMs: Int64?
    /// How old the response already was when it arrived (RFC 9111 §4.2.3), in milliseconds.
    public var initialAgeMs: Int64
    /// The time of the store: it becomes the stored, validated and last-access time.
    public var nowMs: Int64
    /// The body.
    public var body: Data

    /// Creates an entry to store.
    /// - Parameters:
    ///   - resourceKey: Digest of method, URL and credential partition.
    ///   - variantKey: Digest of the varying request headers, or empty.
    ///   - endpoint: The gate's endpoint name.
    ///   - method: The request method.
    ///   - url: The redacted normalised URL.
    ///   - vary: The normalised `Vary` field names, or nil.
    ///   - status: The status code.
    ///   - headers: The header fields to keep.
    ///   - etag: The entity tag.
    ///   - lastModified: The `Last-Modified` value.
    ///   - freshUntilMs: Until when it is fresh.
    ///   - nowMs: The time of the store.
    ///   - body: The body.
    ///   - initialAgeMs: How old the response already was when it arrived.
    public init(
        resourceKey: String, variantKey: String, endpoint: String, method: String, url: String, vary: String?,
        status: Int, headers: [CacheHeaderField], etag: String?, lastModified: String?, freshUntilMs: Int64?,
        nowMs: Int64, body: Data, initialAgeMs: Int64 = 0
    ) {
        self.resourceKey = resourceKey
        self.variantKey = variantKey
        self.endpoint = endpoint
        self.method = method
        self.url = url
        self.vary = vary
        self.status = status
        self.headers = headers
        self.etag = etag
        self.lastModified = lastModified
        self.freshUntilMs = freshUntilMs
        self.nowMs = nowMs
        self.body = body
        self.initialAgeMs = initialAgeMs
    }
}

/// What a `304` changes in a stored entry. The body is never rewritten.
public struct CacheRevision: Sendable, Hashable {
    /// The entry to update.
    public var entryID: Int64
    /// The merged header fields.
    public var headers: [CacheHeaderField]
    /// The entity tag after the merge.
    public var etag: String?
    /// The `Last-Modified` value after the merge.
    public var lastModified: String?
    /// Until when the entry is fresh after the merge.
    public var freshUntilMs: Int64?
    /// The age the revalidating response had when it arrived (RFC 9111 §4.2.3).
    public var initialAgeMs: Int64
    /// The time of the revalidation: the new validated and last-access time.
    public var nowMs: Int64
    /// Whether the server confirmed the entry (a `304`, a matching `HEAD`): a use of it, added to
    /// its hit count. False for a change that only marks the entry stale. The day's statistics are
    /// not the store's to count: the cache buffers a revalidation's count with its other activity.
    public var countsAsRevalidation: Bool

    /// Creates a revision.
    /// - Parameters:
    ///   - entryID: The entry to update.
    ///   - headers: The merged header fields.
    ///   - etag: The entity tag after the merge.
    ///   - lastModified: The `Last-Modified` value after the merge.
    ///   - freshUntilMs: Until when the entry is fresh.
    ///   - nowMs: The time of the revalidation.
    ///   - initialAgeMs: The age the revalidating response had when it arrived.
    ///   - countsAsRevalidation: Whether the server confirmed the entry.
    public init(
        entryID: Int64, headers: [CacheHeaderField], etag: String?, lastModified: String?, freshUntilMs: Int64?,
        nowMs: Int64, initialAgeMs: Int64 = 0, countsAsRevalidation: Bool = true
    ) {
        self.entryID = entryID
        self.headers = headers
        self.etag = etag
        self.lastModified = lastModified
        self.freshUntilMs = freshUntilMs
        self.nowMs = nowMs
        self.initialAgeMs = initialAgeMs
        self.countsAsRevalidation = countsAsRevalidation
    }
}

extension CacheRevision {
    /// The entry as the revision leaves it: what the store writes (see `CacheTable.revise`),
    /// computed without reading it back.
    /// - Parameter metadata: The entry the revision applies to.
    /// - Returns: The revised metadata.
    package func applied(to metadata: CacheEntryMetadata) -> CacheEntryMetadata {
        var revised = metadata
        revised.headers = headers
        revised.etag = etag
        revised.lastModified = lastModified
        revised.freshUntilMs = freshUntilMs
        revised.validatedAtMs = nowMs
        revised.lastAccessMs = max(metadata.lastAccessMs, nowMs)
        revised.hitCount += countsAsRevalidation ? 1 : 0
        revised.initialAgeMs = max(0, initialAgeMs)
        return revised
    }
}
