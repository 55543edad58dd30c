import Foundation
import HTTPTypes

extension ETagCache {
    /// Handles a full answer from the network (not a `304`): stores it, replaces what was stored,
    /// or removes what may no longer be served.
    ///
    /// - A `GET` or `HEAD` answer counts as a miss. It is stored (one write transaction, which also
    ///   writes the buffered touches, expires old entries and evicts LRU-first to the limits) when a
    ///   private cache may store it (RFC 9111 §3): a final status other than `206` and `304`, no
    ///   `no-store`, no `Vary: *`, a body within ``CacheConfiguration/maxBodySize``, and either a
    ///   status cacheable by default (200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501) or
    ///   `max-age`, `Expires`, `public` or `private`. Validators are not required: a response
    ///   without one is served while fresh and fetched again in full when stale. A 2xx that may
    ///   not be stored, or a storable status with `no-store` or `Vary: *`, removes what was stored
    ///   for the resource: it changed. Other statuses leave it.
    /// - A `200` to `HEAD` also updates the stored `GET` responses it describes (RFC 9111 §4.3.5).
    /// - A 2xx or 3xx answer to any method other than `GET`, `HEAD`, `OPTIONS` and `TRACE`
    ///   invalidates every entry stored for its URL and for the same-origin URLs in its `Location`
    ///   and `Content-Location` (RFC 9111 §4.4).
    /// - Parameters:
    ///   - response: The response.
    ///   - body: Its body.
    ///   - request: The request that was sent.
    ///   - endpoint: The endpoint name.
    ///   - requestedAt: When the request was sent, for the response delay in its age (RFC 9111
    ///     §4.2.3); now when omitted.
    /// - Returns: The stored response, or nil when nothing was stored.
    /// - Throws: A storage error.
    @discardableResult
    public func storeResponse(
        _ response: HTTPResponse, body: Data, for request: HTTPRequest, endpoint: String, requestedAt: Date? = nil
    ) async throws -> CachedResponse? {
        try await storeResponse(response, body: body, for: request, endpoint: endpoint, requestedAt: requestedAt,
                                bookkeeping: AnswerBookkeeping()).cached
    }

    /// ``storeResponse(_:body:for:endpoint:requestedAt:)`` that writes the gate's bookkeeping in
    /// the same transaction as the entry. `booked` is nil when nothing was stored, and the
    /// bookkeeping was then not written: the caller writes it.
    func storeResponse(
        _ response: HTTPResponse, body: Data, for request: HTTPRequest, endpoint: String, requestedAt: Date?,
        bookkeeping: AnswerBookkeeping
    ) async throws -> (cached: CachedResponse?, booked: AnswerBookkeepingResult?) {
        let method = request.method
        let status = response.status.code
        guard let key = try? key(for: request) else { return (nil, nil) }
        if !Self.safeMethods.contains(method) {
            guard (200..<400).contains(status) else { return (nil, nil) }
            try await invalidate(after: request, response: response, key: key)
            return (nil, nil)
        }
        guard method == .get || method == .head, status >= 200, status != 304 else { return (nil, nil) }

        let now = clock.now()
        let miss = CacheStatisticsCounts(misses: 1)
        countOutcome(miss, endpoint: endpoint)
        // Buffered like a hit: a run of misses writes the day's statistics row once per threshold.
        let missKey = statisticsKey(endpoint, now: now)
        buffer.withLock { $0.record(miss, for: missKey, at: now) }

        if method == .head, status == 200 {
            try await updateStoredGET(from: response, for: request, endpoint: endpoint, now: now, requestedAt: requestedAt)
        }
        let cacheControl = CacheControl(response.headerFields)
        let permitted = Self.storableByDefault.contains(status) || cacheControl.maxAge != nil
            || response.headerFields.contains(.expires) || cacheControl.isPublic || cacheControl.isPrivate
        // §5.2.2.3: must-understand limits storing to statuses whose caching rules this cache
        // implements, and then no-store, which such responses carry for older caches, is ignored.
        let mustUnderstand = cacheControl.contains("must-understand")
        guard permitted, status != 206, !mustUnderstand || Self.understoodStatuses.contains(status) else {
            logger.debug("cache miss: not stored", metadata: ["cache.url": "\(key.url)", "cache.status": "\(status)"])
            // A 206 is part of the resource, not a new version of it: what is stored stays.
            if (200..<300).contains(status), status != 206 {
                _ = try await withActivity(now: now) { activity in
                    try await self.storage.removeCacheEntries(resourceKey: key.resourceKey, activity: activity)
                }
            }
            return (nil, nil)
        }
        let vary = VaryFields(response.headerFields)
        let etag = CacheHeaders.etag(response.headerFields)
        let lastModified = CacheHeaders.lastModified(response.headerFields)
        let unstorableReason: String? = if !Self.isCacheable(request, ignoringAddedValidators: true) {
            "the request bypasses the cache"
        } else if cacheControl.noStore && !mustUnderstand {
            "Cache-Control: no-store"
        } else if vary == .any {
            "Vary: *"
        } else if body.count > min(configuration.maxBodySize, Int(clamping: configuration.maxTotalBodyBytes)) {
            "body of \(body.count) bytes over the cap of \(configuration.maxBodySize)"
        } else if Self.mayEchoSecret(body, fields: response.headerFields, secrets: key.secrets) {
            // An error page that quotes the request ("API key not valid: …"): a secret never
            // reaches the file, and a body cannot be scrubbed the way a header is without
            // changing what the server said.
            "the body echoes a secret the request carried, or cannot be decoded to tell"
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
            return (nil, nil)
        }

        let freshness = CacheHeaders.freshness(
            response.headerFields, status: status, requestTime: requestedAt ?? now, responseTime: now,
            heuristics: configuration.heuristics, cacheControl: cacheControl
        )
        let headers = CacheHeaders.storableFields(response.headerFields, rules: secretRules, secrets: key.secrets)
        let entry = NewCacheEntry(
            resourceKey: key.resourceKey,
            variantKey: CacheKey.variantKey(for: request, vary: vary.names),
            endpoint: endpoint, method: key.method, url: key.url, vary: vary.stored, status: status,
            headers: headers.stored,
            etag: etag, lastModified: lastModified,
            freshUntilMs: freshness.freshUntil.map(CacheTime.milliseconds),
            nowMs: CacheTime.milliseconds(now), body: body,
            initialAgeMs: SaturatingConversion.milliseconds(freshness.initialAge)
        )
        let retention = retention(now: now)
        let result = try await withActivity(now: now, onlyWhenNeeded: true) { activity in
            try await self.storage.storeCacheEntry(entry, retention: retention, activity: activity,
                                                   bookkeeping: bookkeeping)
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
        // The answer's fields as the store made them, not parsed back from their text.
        let served = result.entry.headers == headers.stored
            ? ServedHeaderFields(headers.stored, parsed: headers.parsed) : ServedHeaderFields(result.entry.headers)
        return (CachedResponse(entry: CacheEntry(metadata: result.entry, body: body), now: now, fields: served),
                result.bookkeeping)
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
    ///   - requestedAt: When the request was sent, for the response delay in the age (RFC 9111
    ///     §4.2.3); now when omitted.
    /// - Returns: The updated stored response, or nil when nothing stored matches the `304`: the
    ///   caller should then send the request again without conditions.
    /// - Throws: A storage error.
    ///
    /// When no stored variant matches the request's `Vary` fields but the `304`'s entity tag names
    /// one (the lookup listed them in `If-None-Match`, RFC 9111 §4.3.2), that variant's body is
    /// stored again as this request's variant, with the `304`'s headers merged.
    public func revalidated(
        _ notModified: HTTPResponse, for request: HTTPRequest, endpoint: String, requestedAt: Date? = nil
    ) async throws -> CachedResponse? {
        try await revalidated(notModified, for: request, endpoint: endpoint, requestedAt: requestedAt,
                              bookkeeping: AnswerBookkeeping()).cached
    }

    /// ``revalidated(_:for:endpoint:requestedAt:)`` that writes the gate's bookkeeping in the same
    /// transaction as the revision. `booked` is nil when the `304` could not apply to the cache at
    /// all, and the bookkeeping was then not written: the caller writes it.
    /// - Parameters:
    ///   - now: The time of the revalidation; the clock's time when nil. The gate passes the time
    ///     its caller's answer was revised at (see ``revisedInMemory(_:of:for:endpoint:requestedAt:at:)``).
    ///   - answered: The caller's answer, revised in memory from the entry it was built from
    ///     (``revisedInMemory(_:of:for:endpoint:requestedAt:at:)``): only that entry is revised, with
    ///     the revision computed then when the entry is still as the answer saw it, and no variant
    ///     is adopted.
    func revalidated(
        _ notModified: HTTPResponse, for request: HTTPRequest, endpoint: String, requestedAt: Date?,
        bookkeeping: AnswerBookkeeping, at now: Date? = nil, answered: RevisedInMemory? = nil
    ) async throws -> (cached: CachedResponse?, booked: AnswerBookkeepingResult?) {
        guard notModified.status.code == 304 else { return (nil, nil) }
        guard Self.isCacheable(request, ignoringAddedValidators: true), let key = try? key(for: request) else {
            return (nil, nil)
        }
        let now = now ?? clock.now()
        let validatedSinceMs = retention(now: now).expiredBeforeMs
        let initialAgeMs = Self.initialAgeMs(notModified.headerFields, requestedAt: requestedAt, now: now)
        let selecting = reviser(notModified, for: request, key: key, endpoint: endpoint, requestedAt: requestedAt, now: now)
        let revise: @Sendable ([CacheEntryMetadata]) -> CacheRevision? = if let answered {
            { candidates in
                guard let candidate = candidates.first(where: { $0.id == answered.base.id }) else { return nil }
                // Revised or replaced since the answer: the 304 merges into what is stored now.
                return answered.base.isSameVersion(as: candidate) ? answered.revision : selecting([candidate])
            }
        } else {
            selecting
        }
        let revision = try await withActivity(now: now, onlyWhenNeeded: true) { activity in
            try await self.storage.reviseCacheEntry(
                resourceKey: key.resourceKey, validatedSinceMs: validatedSinceMs, activity: activity,
                bookkeeping: bookkeeping, revise: revise
            )
        }
        guard let entry = revision.entry else {
            if answered == nil, let copied = try await adoptVariant(confirmedBy: notModified, for: request, key: key, now: now,
                                                   initialAgeMs: initialAgeMs, endpoint: endpoint) {
                return (copied, revision.bookkeeping)
            }
            logger.debug("cache: 304 matched no stored response", metadata: ["cache.url": "\(key.url)"])
            return (nil, revision.bookkeeping)
        }
        let counts = CacheStatisticsCounts(revalidations: 1, bytesSaved: entry.metadata.bodySize)
        // Buffered like a hit: the revision's transaction writes no statistics row of its own.
        let countsKey = statisticsKey(endpoint, now: now)
        buffer.withLock { $0.record(counts, for: countsKey, at: now) }
        countOutcome(counts, endpoint: endpoint)
        logger.debug("cache hit: revalidated", metadata: [
            "cache.endpoint": "\(endpoint)", "cache.url": "\(key.url)", "cache.bytes": "\(entry.body.count)",
        ])
        return (CachedResponse(entry: entry, now: now), revision.bookkeeping)
    }

    /// The stored response a `304` confirms, as ``revalidated(_:for:endpoint:requestedAt:)`` will
    /// write it, computed in memory from the entry the lookup read: the answer a caller can have
    /// before that write, which the gate makes after the answer (DESIGN: one write transaction on
    /// a request's path, the admission).
    /// - Parameters:
    ///   - notModified: The `304` response.
    ///   - stored: The stored response the conditional request was built from.
    ///   - request: The request that was sent.
    ///   - endpoint: The endpoint name.
    ///   - requestedAt: When the request was sent.
    ///   - now: The time of the revalidation.
    /// - Returns: The revised response and the revision that made it, or nil when the `304` does not confirm `stored` (another
    ///   variant, a contradicting `Last-Modified`): only the store can then select what it confirms.
    func revisedInMemory(
        _ notModified: HTTPResponse, of stored: CachedResponse, for request: HTTPRequest, endpoint: String,
        requestedAt: Date?, at now: Date
    ) -> RevisedInMemory? {
        guard notModified.status.code == 304, Self.isCacheable(request, ignoringAddedValidators: true),
              let key = try? key(for: request), key.resourceKey == stored.metadata.resourceKey,
              let revision = reviser(notModified, for: request, key: key, endpoint: endpoint, requestedAt: requestedAt,
                                     now: now)([stored.metadata])
        else { return nil }
        let revised = CacheEntry(metadata: revision.applied(to: stored.metadata), body: stored.body)
        return RevisedInMemory(response: CachedResponse(entry: revised, now: now), revision: revision, base: stored.metadata)
    }

    /// What a `304` changes in the stored entry it selects among `candidates`, or nil when it selects none.
    private func reviser(
        _ notModified: HTTPResponse, for request: HTTPRequest, key: CacheKey, endpoint: String, requestedAt: Date?,
        now: Date
    ) -> @Sendable ([CacheEntryMetadata]) -> CacheRevision? {
        let rules = secretRules
        let fields = notModified.headerFields
        let heuristics = configuration.heuristics
        let initialAgeMs = Self.initialAgeMs(fields, requestedAt: requestedAt, now: now)
        return { candidates in
            guard let selected = Self.selectRevalidated(among: candidates, for: request, notModified: fields) else {
                return nil
            }
            let merged = CacheHeaders.merge(
                stored: selected.headers, notModified: fields, rules: rules, secrets: key.secrets
            )
            return Self.revision(of: selected, merged: merged, initialAgeMs: initialAgeMs, now: now, heuristics: heuristics)
        }
    }

    /// The age a revalidating response had when it arrived (RFC 9111 §4.2.3), in milliseconds.
    private static func initialAgeMs(_ fields: HTTPFields, requestedAt: Date?, now: Date) -> Int64 {
        SaturatingConversion.milliseconds(CacheHeaders.initialAge(fields, requestTime: requestedAt ?? now, responseTime: now))
    }

    /// A stored entry after the server confirmed it with `merged` headers: new validators,
    /// freshness and age, counted as a revalidation.
    static func revision(
        of selected: CacheEntryMetadata, merged: [CacheHeaderField], initialAgeMs: Int64, now: Date,
        heuristics: HeuristicFreshness
    ) -> CacheRevision {
        let mergedFields = CacheHeaders.fields(merged)
        let cacheControl = CacheControl(mergedFields)
        let lifetime = CacheHeaders.lifetime(
            mergedFields, cacheControl: cacheControl, status: selected.status, responseTime: now,
            heuristics: heuristics
        )
        let nowMs = CacheTime.milliseconds(now)
        let freshUntilMs: Int64? = cacheControl.noCache
            ? nil : nowMs + SaturatingConversion.milliseconds(min(lifetime, 100 * 365 * 86_400)) - initialAgeMs
        return CacheRevision(
            entryID: selected.id, headers: merged,
            etag: CacheHeaders.etag(mergedFields), lastModified: CacheHeaders.lastModified(mergedFields),
            freshUntilMs: freshUntilMs, nowMs: nowMs, initialAgeMs: initialAgeMs
        )
    }

    /// RFC 9111 §4.3.2 and §4.3.4: a `304` whose entity tag names a stored variant that this
    /// request's `Vary` fields did not select says that variant fits this request too: it is stored
    /// again under this request's variant key, with the `304`'s headers merged.
    private func adoptVariant(
        confirmedBy notModified: HTTPResponse, for request: HTTPRequest, key: CacheKey, now: Date,
        initialAgeMs: Int64, endpoint: String
    ) async throws -> CachedResponse? {
        guard let tag = CacheHeaders.etag(notModified.headerFields) else { return nil }
        let strong = !tag.hasPrefix("W/")
        let source = try await storage.cachedEntry(
            resourceKey: key.resourceKey, validatedSinceMs: retention(now: now).expiredBeforeMs,
            selectVariant: { candidates in
                candidates.filter { candidate in
                    guard let stored = candidate.etag, VaryFields(stored: candidate.vary) != .any else { return false }
                    return strong ? stored == tag : CacheHeaders.weaklyMatch(stored, tag)
                }.max { ($0.validatedAtMs, $0.id) < ($1.validatedAtMs, $1.id) }?.id
            }
        )
        guard let source else { return nil }
        let metadata = source.metadata
        let merged = CacheHeaders.merge(stored: metadata.headers, notModified: notModified.headerFields,
                                        rules: secretRules, secrets: key.secrets)
        let revision = Self.revision(of: metadata, merged: merged, initialAgeMs: initialAgeMs, now: now,
                                     heuristics: configuration.heuristics)
        let vary = VaryFields(stored: metadata.vary)
        let entry = NewCacheEntry(
            resourceKey: key.resourceKey, variantKey: CacheKey.variantKey(for: request, vary: vary.names),
            endpoint: endpoint, method: key.method, url: key.url, vary: vary.stored, status: metadata.status,
            headers: merged, etag: revision.etag, lastModified: revision.lastModified,
            freshUntilMs: revision.freshUntilMs, nowMs: revision.nowMs, body: source.body, initialAgeMs: initialAgeMs
        )
        let retention = retention(now: now)
        let result = try await withActivity(now: now) { activity in
            try await self.storage.storeCacheEntry(entry, retention: retention, activity: activity)
        }
        let counts = CacheStatisticsCounts(revalidations: 1, bytesSaved: Int64(source.body.count))
        let countsKey = statisticsKey(endpoint, now: now)
        buffer.withLock { $0.record(counts, for: countsKey, at: now) }
        countOutcome(counts, endpoint: endpoint)
        logger.debug("cache hit: 304 selected another variant", metadata: ["cache.url": "\(key.url)"])
        return CachedResponse(entry: CacheEntry(metadata: result.entry, body: source.body), now: now)
    }

    /// RFC 9111 §4.3.5: a `200` to `HEAD` updates the stored `GET` response it describes when their
    /// validators match (and its `Content-Length`, if any, is the stored body's), and marks it stale
    /// otherwise.
    func updateStoredGET(
        from head: HTTPResponse, for request: HTTPRequest, endpoint: String, now: Date, requestedAt: Date?
    ) async throws {
        var asGET = request
        asGET.method = .get
        let getRequest = asGET
        guard let key = try? key(for: getRequest) else { return }
        let fields = head.headerFields
        let rules = secretRules
        let heuristics = configuration.heuristics
        let initialAgeMs = SaturatingConversion.milliseconds(CacheHeaders.initialAge(fields, requestTime: requestedAt ?? now, responseTime: now))
        let nowMs = CacheTime.milliseconds(now)
        let revise: @Sendable ([CacheEntryMetadata]) -> CacheRevision? = { candidates in
            guard let selected = Self.selectVariant(among: candidates, for: getRequest) else { return nil }
            let headETag = CacheHeaders.etag(fields), headLastModified = CacheHeaders.lastModified(fields)
            let validatorsMatch = (headETag != nil || headLastModified != nil)
                && (headETag.map { $0 == selected.etag } ?? true)
                && (headLastModified.map { $0 == selected.lastModified } ?? true)
            let lengthMatches = fields[.contentLength].map { Int64($0) == selected.bodySize } ?? true
            if validatorsMatch && lengthMatches {
                let merged = CacheHeaders.merge(stored: selected.headers, notModified: fields, rules: rules,
                                                secrets: key.secrets)
                return Self.revision(of: selected, merged: merged, initialAgeMs: initialAgeMs, now: now,
                                     heuristics: heuristics)
            }
            return CacheRevision(
                entryID: selected.id, headers: selected.headers, etag: selected.etag,
                lastModified: selected.lastModified, freshUntilMs: min(selected.freshUntilMs ?? nowMs, nowMs),
                nowMs: selected.validatedAtMs, initialAgeMs: selected.initialAgeMs,
                countsAsRevalidation: false
            )
        }
        let updated = try await withActivity(now: now) { activity in
            try await self.storage.reviseCacheEntry(
                resourceKey: key.resourceKey, validatedSinceMs: self.retention(now: now).expiredBeforeMs,
                activity: activity, revise: revise
            )
        }
        if updated != nil { logger.debug("cache: HEAD response applied to the stored GET", metadata: ["cache.url": "\(key.url)"]) }
    }

    /// Whether a body may hold one of the request's secrets: searched as the server meant it, decoded
    /// when it came compressed (every Google client library asks for gzip, errors included). A body
    /// whose coding cannot be undone within the decoder's limit cannot be searched, so it may.
    static func mayEchoSecret(_ body: Data, fields: HTTPFields, secrets: [String]) -> Bool {
        guard !secrets.isEmpty else { return false }
        guard let plain = ContentDecoding.decoded(body, fields: fields) else { return true }
        return secrets.contains { plain.containsUTF8(of: $0) }
    }

    /// Methods that never change the resource (RFC 9110 §9.2.1); any other that succeeds invalidates.
    static let safeMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace]

    /// The final statuses RFC 9110 §15 defines, whose caching rules this cache follows (206 aside:
    /// partial content is never stored).
    static let understoodStatuses: Set<Int> = Set([200, 201, 202, 203, 204, 205] + Array(300...304) + [307, 308]
        + Array(400...417) + [421, 422, 426] + Array(500...505))

    /// Statuses a private cache may store without explicit freshness (RFC 9110 §15.1), minus 206.
    static let storableByDefault: Set<Int> = CacheHeaders.heuristicallyCacheable.subtracting([206])

    /// RFC 9111 §4.4: an unsafe method's success invalidates its target URI and the same-origin
    /// URIs in `Location` and `Content-Location`, whatever their method, credential or variant.
    private func invalidate(after request: HTTPRequest, response: HTTPResponse, key: CacheKey) async throws {
        var urls = [key.url]
        if let scheme = request.scheme, let authority = request.authority, let path = request.path,
           let base = URL(string: "\(scheme)://\(authority)\(path)") {
            for name in [HTTPField.Name.location, .contentLocation] {
                guard let value = response.headerFields[name], let target = URL(string: value, relativeTo: base)?.absoluteURL,
                      let targetScheme = target.scheme?.lowercased(), targetScheme == scheme.lowercased(),
                      let targetHost = target.host?.lowercased(), let baseHost = base.host?.lowercased(),
                      targetHost == baseHost, (target.port ?? Self.defaultPort(targetScheme)) == (base.port ?? Self.defaultPort(targetScheme))
                else { continue }
                var other = HTTPRequest(method: .get, scheme: nil, authority: nil, path: nil)
                other.scheme = targetScheme
                other.authority = target.port.map { "\(targetHost):\($0)" } ?? targetHost
                var targetPath = target.path(percentEncoded: true)
                if targetPath.isEmpty { targetPath = "/" }
                if let query = target.query(percentEncoded: true) { targetPath += "?\(query)" }
                other.path = targetPath
                other.headerFields = request.headerFields
                if let otherKey = try? self.key(for: other), !urls.contains(otherKey.url) { urls.append(otherKey.url) }
            }
        }
        var removed = 0
        for url in urls {
            removed += try await withActivity(now: clock.now()) { activity in
                try await self.storage.invalidateCacheEntries(url: url, activity: activity)
            }
        }
        logger.debug("cache invalidated by unsafe method", metadata: [
            "cache.method": "\(request.method)", "cache.url": "\(key.url)", "cache.removed": "\(removed)",
        ])
    }

    private static func defaultPort(_ scheme: String) -> Int? {
        ["http": 80, "https": 443][scheme]
    }

    static func selectRevalidated(
        among candidates: [CacheEntryMetadata], for request: HTTPRequest, notModified: HTTPFields
    ) -> CacheEntryMetadata? {
        let matching = variants(among: candidates, matching: request)
        let tag = CacheHeaders.etag(notModified)
        if let tag, let confirmed = matching.lazy.filter({ $0.etag.map { CacheHeaders.weaklyMatch($0, tag) } ?? false })
            .max(by: { ($0.validatedAtMs, $0.id) < ($1.validatedAtMs, $1.id) }) {
            return confirmed
        }
        guard let selected = selectVariant(among: matching, for: request) else { return nil }
        if tag != nil, selected.etag != nil {
            // RFC 9111 §4.3.4: an entity tag selects the stored responses that carry it. One that
            // names none of them (the resource changed between the request and the 304, or a
            // confused server) confirms nothing stored: the stored body under a tag it never had
            // would be a wrong answer. A stored response without a tag, validated by its date, is
            // left to the Last-Modified rule below.
            return nil
        }
        if tag == nil, let lastModified = CacheHeaders.lastModified(notModified), let stored = selected.lastModified,
           lastModified != stored {
            return nil
        }
        return selected
    }
}
