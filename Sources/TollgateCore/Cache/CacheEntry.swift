import Foundation

/// One response header field as the cache stores it: a name and a value, in the response's order.
public struct CacheHeaderField: Sendable, Hashable {
    /// The field name as the server spelled it.
    public var name: String
    /// The field value.
    public var value: String

    /// Creates a field.
    /// - Parameters:
    ///   - name: The field name.
    ///   - value: The field value.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// The metadata of one stored response: everything but its body.
///
/// Keys and URLs are already free of secrets: the cache service computes them before they reach
/// the store.
public struct CacheEntryMetadata: Sendable, Hashable {
    /// The entry's row id, stable while the entry lives (a replacing `200` keeps it).
    public var id: Int64
    /// Digest of the method, the normalised URL and the credential partition.
    public var resourceKey: String
    /// Digest of the request's values for the headers that `vary` names; empty when none.
    public var variantKey: String
    /// The endpoint the response was stored for, as the gate names it.
    public var endpoint: String
    /// The request method, such as `GET`.
    public var method: String
    /// The normalised URL with every secret replaced by a marker.
    public var url: String
    /// The normalised field names of the response's `Vary`, comma-separated; nil when none.
    public var vary: String?
    /// The response status code.
    public var status: Int
    /// The response header fields, without secrets and `Set-Cookie`.
    public var headers: [CacheHeaderField]
    /// The entity tag, verbatim (weak or strong).
    public var etag: String?
    /// The `Last-Modified` value, verbatim.
    public var lastModified: String?
    /// The body's length in bytes.
    public var bodySize: Int64
    /// When the response was stored (milliseconds since 1970).
    public var storedAtMs: Int64
    /// When the server last confirmed the response: stored, or revalidated by a `304`.
    public var validatedAtMs: Int64
    /// When the response becomes stale (possibly before it was stored, when it arrived already
    /// stale); nil when it must be revalidated before every use.
    public var freshUntilMs: Int64?
    /// How old the response already was when it was stored or last revalidated (RFC 9111 §4.2.3's
    /// corrected initial age), in milliseconds: its current age is this plus the time since
    /// ``validatedAtMs``.
    public var initialAgeMs: Int64
    /// When the entry was last used: the LRU order.
    public var lastAccessMs: Int64
    /// How many times the entry answered a request (fresh hits and revalidations).
    public var hitCount: Int64

    /// Creates metadata from its parts.
    /// - Parameters:
    ///   - id: The row id.
    ///   - resourceKey: Digest of method, URL and credential partition.
    ///   - variantKey: Digest of the varying request headers, or empty.
    ///   - endpoint: The gate's endpoint name.
    ///   - method: The request method.
    ///   - url: The redacted normalised URL.
    ///   - vary: The normalised `Vary` field names, or nil.
    ///   - status: The status code.
    ///   - headers: The stored header fields.
    ///   - etag: The entity tag.
    ///   - lastModified: The `Last-Modified` value.
    ///   - bodySize: The body's length.
    ///   - storedAtMs: When it was stored.
    ///   - validatedAtMs: When it was last validated.
    ///   - freshUntilMs: Until when it is fresh.
    ///   - lastAccessMs: When it was last used.
    ///   - hitCount: How often it answered a request.
    ///   - initialAgeMs: Its age when it was stored or last revalidated.
    public init(
        id: Int64, resourceKey: String, variantKey: String, endpoint: String, method: String, url: String,
        vary: String?, status: Int, headers: [CacheHeaderField], etag: String?, lastModified: String?,
        bodySize: Int64, storedAtMs: Int64, validatedAtMs: Int64, freshUntilMs: Int64?, lastAccessMs: Int64,
        hitCount: Int64, initialAgeMs: Int64 = 0
    ) {
        self.id = id
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
        self.bodySize = bodySize
        self.storedAtMs = storedAtMs
        self.validatedAtMs = validatedAtMs
        self.freshUntilMs = freshUntilMs
        self.lastAccessMs = lastAccessMs
        self.hitCount = hitCount
        self.initialAgeMs = initialAgeMs
    }
}

/// A stored response: its metadata and its body.
public struct CacheEntry: Sendable, Hashable {
    /// Everything but the body.
    public var metadata: CacheEntryMetadata
    /// The response body.
    public var body: Data

    /// Creates an entry.
    /// - Parameters:
    ///   - metadata: The metadata.
    ///   - body: The body.
    public init(metadata: CacheEntryMetadata, body: Data) {
        self.metadata = metadata
        self.body = body
    }
}
