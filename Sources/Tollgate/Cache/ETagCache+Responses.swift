import Foundation
import HTTPTypes

extension ETagCache {
    /// Handles a full answer from the network (not a `304`): stores it, replaces what was stored,
    /// or removes what may no longer be served.
    ///
    /// - A `GET` or `HEAD` answer counts as a miss. It is stored (one write transaction, which also
    ///   writes the buffered touches, expires old entries and evicts LRU-first to the limits) when
    ///   it is a 2xx other than `206`, has an `ETag` or `Last-Modified`, is not `no-store`, has no
    ///   `Vary: *` and its body fits ``CacheConfiguration/maxBodySize``. A 2xx that fails those
    ///   rules removes what was stored for the resource.
    /// - A 2xx or 3xx answer to `POST`, `PUT`, `PATCH` or `DELETE` invalidates every entry stored
    ///   for the URL.
    /// - Parameters:
    ///   - response: The response.
    ///   - body: Its body.
    ///   - request: The request that was sent.
    ///   - endpoint: The endpoint name.
    /// - Returns: The stored response, or nil when nothing was stored.
    /// - Throws: A storage error.
    @discardableResult
    public func storeResponse(
        _ response: HTTPResponse, body: Data, for request: HTTPRequest, endpoint: String
    ) async throws -> CachedResponse? {
        let method = request.method
        let status = response.status.code
        guard let key = try? key(for: request) else { return nil }
        if [.post, .put, .patch, .delete].contains(method) {
            guard (200..<400).contains(status) else { return nil }
            let removed = try await withActivity(now: clock.now()) { activity in
                try await self.storage.invalidateCacheEntries(url: key.url, activity: activity)
            }
            logger.debug("cache invalidated by unsafe method", metadata: [
                "cache.method": "\(method)", "cache.url": "\(key.url)", "cache.removed": "\(removed)",
            ])
            return nil
        }
        guard method == .get || method == .head, status != 304 else { return nil }

        let now = clock.now()
        let miss = CacheStatisticsCounts(misses: 1)
        countOutcome(miss, endpoint: endpoint)
        buffer.withLock { $0.activity.count(miss, for: statisticsKey(endpoint, now: now)) }

        guard (200..<300).contains(status), status != 206 else {
            logger.debug("cache miss: not stored", metadata: ["cache.url": "\(key.url)", "cache.status": "\(status)"])
            return nil
        }
        let vary = VaryFields(response.headerFields)
        let etag = CacheHeaders.etag(response.headerFields)
        let lastModified = CacheHeaders.lastModified(response.headerFields)
        let unstorableReason: String? = if !Self.isCacheable(request, ignoringAddedValidators: true) {
            "the request bypasses the cache"
        } else if CacheControl(response.headerFields).noStore {
            "Cache-Control: no-store"
        } else if vary == .any {
            "Vary: *"
        } else if etag == nil && lastModified == nil {
            "no ETag or Last-Modified"
        } else if body.count > min(configuration.maxBodySize, Int(clamping: configuration.maxTotalBodyBytes)) {
            "body of \(body.count) bytes over the cap of \(configuration.maxBodySize)"
        } else {
            nil
        }
        if let unstorableReason {
            let removed = try await withActivity(now: now) { activity in
                try await self.storage.removeCacheEntries(resourceKey: key.resourceKey, activity: activity)
            }
            logger.debug("cache miss: not stored", metadata: [
                "cache.url": "\(key.url)", "cache.reason": "\(unstorableReason)", "cache.removed": "\(removed)",
            ])
            return nil
        }

        let entry = NewCacheEntry(
            resourceKey: key.resourceKey,
            variantKey: CacheKey.variantKey(for: request, vary: vary.names),
            endpoint: endpoint, method: key.method, url: key.url, vary: vary.stored, status: status,
            headers: CacheHeaders.storable(
                response.headerFields, sensitive: configuration.sensitiveHeaders, secrets: key.secrets
            ),
            etag: etag, lastModified: lastModified,
            freshUntilMs: CacheHeaders.freshUntil(response.headerFields, now: now).map(CacheTime.milliseconds),
            nowMs: CacheTime.milliseconds(now), body: body
        )
        let retention = retention(now: now)
        let result = try await withActivity(now: now) { activity in
            try await self.storage.storeCacheEntry(entry, retention: retention, activity: activity)
        }
        logger.debug("cache miss: stored", metadata: [
            "cache.endpoint": "\(endpoint)", "cache.url": "\(key.url)", "cache.bytes": "\(body.count)",
            "cache.replaced": "\(result.replaced)",
        ])
        if result.pruned.evicted > 0 || result.pruned.expired > 0 {
            logger.debug("cache evicted", metadata: [
                "cache.evicted": "\(result.pruned.evicted)", "cache.expired": "\(result.pruned.expired)",
            ])
        }
        return CachedResponse(entry: CacheEntry(metadata: result.entry, body: body), now: now)
    }

    /// Handles a `304 Not Modified`: selects the stored response it confirms (RFC 9111 §4.3.4),
    /// merges every field of the `304` except `Content-Length` into it, persists that, resets its
    /// validation time, moves it up the LRU order and returns it with its stored body. Counted as a
    /// revalidation. The body is not rewritten.
    ///
    /// The `304` answers the conditional request built from one stored variant, so that variant is
    /// selected; when the `304` carries an `ETag` that weakly matches another variant the request
    /// also matches, that one is. A `304` whose `Last-Modified` contradicts the stored one selects
    /// nothing.
    /// - Parameters:
    ///   - notModified: The `304` response.
    ///   - request: The request that was sent (with or without the conditional fields).
    ///   - endpoint: The endpoint name.
    /// - Returns: The updated stored response, or nil when nothing stored matches the `304`: the
    ///   caller should then send the request again without conditions.
    /// - Throws: A storage error.
    public func revalidated(
        _ notModified: HTTPResponse, for request: HTTPRequest, endpoint: String
    ) async throws -> CachedResponse? {
        guard notModified.status.code == 304 else { return nil }
        guard Self.isCacheable(request, ignoringAddedValidators: true), let key = try? key(for: request) else { return nil }
        let now = clock.now()
        let nowMs = CacheTime.milliseconds(now)
        let sensitive = configuration.sensitiveHeaders
        let statisticsKey = statisticsKey(endpoint, now: now)
        let validatedSinceMs = retention(now: now).expiredBeforeMs
        let fields = notModified.headerFields
        let revise: @Sendable ([CacheEntryMetadata]) -> CacheRevision? = { candidates in
            guard let selected = Self.selectRevalidated(among: candidates, for: request, notModified: fields) else {
                return nil
            }
            let merged = CacheHeaders.merge(
                stored: selected.headers, notModified: fields, sensitive: sensitive, secrets: key.secrets
            )
            let mergedFields = CacheHeaders.fields(merged)
            return CacheRevision(
                entryID: selected.id, headers: merged,
                etag: CacheHeaders.etag(mergedFields), lastModified: CacheHeaders.lastModified(mergedFields),
                freshUntilMs: CacheHeaders.freshUntil(mergedFields, now: now).map(CacheTime.milliseconds),
                nowMs: nowMs, statisticsKey: statisticsKey
            )
        }
        let entry = try await withActivity(now: now) { activity in
            try await self.storage.reviseCacheEntry(
                resourceKey: key.resourceKey, validatedSinceMs: validatedSinceMs, activity: activity, revise: revise
            )
        }
        guard let entry else {
            logger.debug("cache: 304 matched no stored response", metadata: ["cache.url": "\(key.url)"])
            return nil
        }
        countOutcome(CacheStatisticsCounts(revalidations: 1, bytesSaved: entry.metadata.bodySize), endpoint: endpoint)
        logger.debug("cache hit: revalidated", metadata: [
            "cache.endpoint": "\(endpoint)", "cache.url": "\(key.url)", "cache.bytes": "\(entry.body.count)",
        ])
        return CachedResponse(entry: entry, now: now)
    }

    static func selectRevalidated(
        among candidates: [CacheEntryMetadata], for request: HTTPRequest, notModified: HTTPFields
    ) -> CacheEntryMetadata? {
        let matching = candidates.filter { candidate in
            let vary = VaryFields(stored: candidate.vary)
            return vary != .any && CacheKey.variantKey(for: request, vary: vary.names) == candidate.variantKey
        }
        if let etag = CacheHeaders.etag(notModified),
           let confirmed = matching.filter({ $0.etag.map { CacheHeaders.weaklyMatch($0, etag) } ?? false })
            .max(by: { ($0.validatedAtMs, $0.id) < ($1.validatedAtMs, $1.id) }) {
            return confirmed
        }
        guard let selected = selectVariant(among: matching, for: request) else { return nil }
        if let lastModified = CacheHeaders.lastModified(notModified), let stored = selected.lastModified,
           CacheHeaders.etag(notModified) == nil, lastModified != stored {
            return nil
        }
        return selected
    }
}
