import Foundation
import HTTPTypes
import Logging
import Synchronization

/// The ETag cache: stores responses in the store, answers fresh ones with no request, and turns
/// the others into conditional requests whose `304` costs no quota.
///
/// The gate calls ``lookup(_:endpoint:)`` before a request, then ``storeResponse(_:body:for:endpoint:requestedAt:)``
/// with a full answer or ``revalidated(_:for:endpoint:requestedAt:)`` with a `304`. When it cannot send (circuit
/// open, quota spent, throttled) it can serve ``staleResponse(for:endpoint:)`` and count it with
/// ``recordStaleServe(_:endpoint:)``.
///
/// Fresh hits are the hot path: one on an entry read recently reads no row (the store keeps it in
/// memory while no other connection has committed), any other costs one read transaction. Their
/// LRU touches and counts, and the counts of misses and revalidations, are buffered in memory and
/// written once ``CacheConfiguration/activityFlushThreshold`` uses have gathered or
/// ``CacheConfiguration/activityFlushInterval`` has passed, or earlier with a store or a `304`'s
/// revision while touches wait (a store's eviction must see every use). Call ``flush()`` before
/// the process exits so the last few are not lost.
///
/// ```swift
/// let cache = try ETagCache(storage: store, clock: SystemClock())
/// switch try await cache.lookup(request, endpoint: "videos.list") {
/// case .fresh(let cached): return cached.body
/// case .revalidate(_, let conditional), .miss(let conditional): send(conditional)
/// }
/// ```
public final class ETagCache: Sendable {
    /// The rules in force.
    public let configuration: CacheConfiguration
    let storage: any CacheStorage
    let clock: any TollgateClock
    let logger: Logger
    let buffer = Mutex(CacheActivityBuffer())
    let secretRules: CacheKey.SecretRules
    /// The keys of recent requests: a request is keyed on the lookup, the coalescing and the store
    /// of its answer, and a refresh asks for the same URL again and again. Memory only, like the
    /// secrets a key holds for scrubbing.
    private let recentKeys = Mutex<[RequestFingerprint: CacheKey]>([:])
    private static let recentKeysLimit = 512
    /// The parsed header fields of recently served entries, by entry id (see ``ServedHeaderFields``).
    private let servedFields = Mutex<[Int64: ServedHeaderFields]>([:])
    private static let servedFieldsLimit = 512
    /// The Pacific day of the last use counted: its bounds and its key.
    private let today = Mutex<(start: Date, end: Date, key: String)?>(nil)

    /// Creates a cache over a store.
    /// - Parameters:
    ///   - storage: Where entries and statistics live, such as an `SQLiteStore`.
    ///   - configuration: The rules; the defaults when omitted.
    ///   - clock: The wall clock for freshness, expiry and LRU times.
    ///   - logger: Where the cache logs; the task's current logger by default.
    /// - Throws: ``CacheError/invalidConfiguration(_:)`` for a limit it cannot use.
    public init(
        storage: any CacheStorage, configuration: CacheConfiguration = CacheConfiguration(),
        clock: any TollgateClock, logger: Logger = Logger.current
    ) throws(CacheError) {
        self.storage = storage
        self.configuration = try configuration.validated()
        self.secretRules = CacheKey.SecretRules(configuration)
        self.clock = clock
        self.logger = logger
    }

    /// The cache key of a request under this cache's secret rules.
    /// - Parameter request: The request.
    /// - Returns: Its key.
    /// - Throws: ``CacheError/unkeyableRequest(_:)`` when the request has no URL to key on, or
    ///   its key is longer than the store can index (``CacheStorage/maximumResourceKeyBytes``).
    public func key(for request: HTTPRequest) throws(CacheError) -> CacheKey {
        let fingerprint = RequestFingerprint(request: request)
        if let known = recentKeys.withLock({ $0[fingerprint] }) { return known }
        let key = try CacheKey(request: request, secretRules: secretRules)
        if let limit = storage.maximumResourceKeyBytes, key.resourceKey.utf8.count > limit {
            throw CacheError.unkeyableRequest(
                "its cache key (\(key.resourceKey.utf8.count) bytes: the URL and a digest) is longer than the store indexes (\(limit) bytes)"
            )
        }
        recentKeys.withLock { keys in
            if keys.count >= Self.recentKeysLimit { keys.removeAll(keepingCapacity: true) }
            keys[fingerprint] = key
        }
        return key
    }

    // MARK: Lookup

    /// What to do with a request: serve a stored response, revalidate one, or send the request.
    ///
    /// Only `GET` and `HEAD` are looked up. A request that carries its own conditional or `Range`
    /// fields, or `Cache-Control: no-store`, passes through as a miss. A stored response answers
    /// with no request while it is fresh (RFC 9111 §4.2), or stale within the request's `max-stale`,
    /// unless either side says `no-cache` (`Pragma: no-cache` counts when the request has no
    /// `Cache-Control`), or the request's `max-age` or `min-fresh` rule it out (§5.2.1). Otherwise it
    /// is revalidated with its `ETag` or `Last-Modified`, or fetched again in full when it has
    /// neither. A fresh hit is counted here; revalidations and misses when their answer arrives.
    ///
    /// With `freshFor`, a stored response past its own freshness is served all the same while less
    /// than that has passed since it was stored or revalidated (``CacheLookup/chosenFresh(_:)``),
    /// whatever its `max-age=0`, `no-cache` or `must-revalidate` said, unless the request itself says
    /// `no-cache` or a `max-age` the response's age exceeds.
    /// - Parameters:
    ///   - request: The request the caller wants to send.
    ///   - endpoint: The endpoint name, for statistics and per-endpoint rules.
    ///   - freshFor: The freshness the caller chose; nil follows RFC 9111 alone.
    /// - Returns: The decision.
    /// - Throws: A storage error.
    public func lookup(_ request: HTTPRequest, endpoint: String, freshFor: Duration? = nil) async throws -> CacheLookup {
        guard Self.isCacheable(request), let key = try? key(for: request) else { return .miss(request) }
        let now = clock.now()
        let (stored, otherVariantTags) = try await storedOrVariantTags(key: key, request: request, now: now)
        guard let cached = stored else {
            logger.debug("cache miss", metadata: ["cache.endpoint": "\(endpoint)", "cache.url": "\(key.url)"])
            guard !otherVariantTags.isEmpty else { return .miss(request) }
            // RFC 9111 §4.3.2: the server may say that one of the stored variants fits this request too.
            var conditional = request
            conditional.headerFields[.ifNoneMatch] = otherVariantTags.joined(separator: ", ")
            return .miss(conditional)
        }
        if configuration.servesFresh(for: endpoint), cached.satisfies(RequestDirectives(request.headerFields), at: now) {
            logger.debug("cache hit: fresh", metadata: [
                "cache.endpoint": "\(endpoint)", "cache.url": "\(key.url)", "cache.age_ms": "\(cached.age.milliseconds)",
            ])
            try await recordUse(of: cached, endpoint: endpoint, counts: CacheStatisticsCounts(hits: 1, bytesSaved: Int64(cached.body.count)), now: now)
            return .fresh(cached)
        }
        if let freshFor, configuration.servesFresh(for: endpoint),
           cached.isWithin(chosenFreshness: freshFor, for: RequestDirectives(request.headerFields), at: now) {
            logger.debug("cache hit: within the chosen freshness", metadata: [
                "cache.endpoint": "\(endpoint)", "cache.url": "\(key.url)", "cache.age_ms": "\(cached.age.milliseconds)",
            ])
            try await recordUse(of: cached, endpoint: endpoint, counts: CacheStatisticsCounts(hits: 1, bytesSaved: Int64(cached.body.count)), now: now)
            return .chosenFresh(cached)
        }
        var conditional = request
        if let etag = cached.etag, CacheHeaders.isIntact(etag) {
            conditional.headerFields[.ifNoneMatch] = etag
        } else if let lastModified = cached.lastModified {
            conditional.headerFields[.ifModifiedSince] = lastModified
        }
        logger.debug("cache revalidation", metadata: ["cache.endpoint": "\(endpoint)", "cache.url": "\(key.url)"])
        return .revalidate(cached, conditionalRequest: conditional)
    }

    /// The stored response for a request regardless of its freshness, with its age: for serving
    /// stale when the circuit is open, the quota is spent or the throttle is full. Entries past
    /// ``CacheConfiguration/maxAge`` are gone and never returned. Whether its directives allow
    /// serving it stale is ``CachedResponse/mayServeStaleOnError(for:at:)``'s answer, not this
    /// method's. Nothing is counted: call ``recordStaleServe(_:endpoint:)`` when the response is served.
    /// - Parameters:
    ///   - request: The request.
    ///   - endpoint: The endpoint name.
    /// - Returns: The stored response, or nil.
    /// - Throws: A storage error.
    public func staleResponse(for request: HTTPRequest, endpoint: String) async throws -> CachedResponse? {
        guard Self.isCacheable(request), let key = try? key(for: request) else { return nil }
        return try await stored(key: key, request: request, now: clock.now())
    }

    /// Counts a stale serve (and moves the entry up the LRU order).
    /// - Parameters:
    ///   - cached: The response that was served.
    ///   - endpoint: The endpoint name.
    /// - Throws: A storage error, when this use triggers a write of the buffer.
    public func recordStaleServe(_ cached: CachedResponse, endpoint: String) async throws {
        logger.debug("cache served stale", metadata: [
            "cache.endpoint": "\(endpoint)", "cache.age_ms": "\(cached.age.milliseconds)",
        ])
        try await recordUse(of: cached, endpoint: endpoint, counts: CacheStatisticsCounts(stale: 1), now: clock.now())
    }

    /// Counts a stored response served to a request that waited for an identical request's answer.
    /// Buffered like a fresh hit.
    /// - Parameters:
    ///   - cached: The response served.
    ///   - endpoint: The endpoint.
    /// - Throws: A storage error.
    public func recordCoalescedServe(_ cached: CachedResponse, endpoint: String) async throws {
        try await recordUse(of: cached, endpoint: endpoint,
                            counts: CacheStatisticsCounts(bytesSaved: Int64(cached.body.count), coalesced: 1),
                            now: clock.now())
    }

    // MARK: Maintenance

    /// Writes the buffered LRU touches and counts now.
    /// - Throws: A storage error; the buffer is kept then.
    public func flush() async throws {
        let activity = buffer.withLock { $0.take() }
        guard !activity.isEmpty else { return }
        do {
            try await storage.recordCacheActivity(activity)
        } catch {
            let now = clock.now()
            buffer.withLock { $0.restore(activity, at: now) }
            throw error
        }
    }

    /// Removes expired entries and evicts until the limits hold (every store does this as well).
    /// - Parameter recordingAdminEvent: Whether an operator asked for it: the prune is then recorded
    ///   in `admin_events`, in the same transaction, even when it removed nothing.
    /// - Returns: What was removed.
    /// - Throws: A storage error.
    @discardableResult
    public func prune(recordingAdminEvent: Bool = false) async throws -> CachePruneResult {
        let now = clock.now()
        let result = try await withActivity(now: now) { activity in
            recordingAdminEvent
                ? try await self.storage.pruneCache(retention: self.retention(now: now), activity: activity, recordedAt: now)
                : try await self.storage.pruneCache(retention: self.retention(now: now), activity: activity)
        }
        if result.expired + result.evicted > 0 || recordingAdminEvent {
            logger.info("cache pruned", metadata: ["cache.expired": "\(result.expired)", "cache.evicted": "\(result.evicted)"])
        }
        return result
    }

    /// Removes every stored response, or one endpoint's, recording the clear in `admin_events` in
    /// the same transaction. Statistics are kept.
    /// - Parameter endpoint: One endpoint's entries, or nil for all.
    /// - Returns: What was removed.
    /// - Throws: A storage error.
    @discardableResult
    public func clear(endpoint: String? = nil) async throws -> CacheClearResult {
        let now = clock.now()
        let result = try await withActivity(now: now) { activity in
            try await self.storage.clearCache(endpoint: endpoint, activity: activity, at: now)
        }
        logger.notice("cache cleared", metadata: [
            "cache.endpoint": "\(endpoint ?? "*")", "cache.entries": "\(result.entries)", "cache.bytes": "\(result.bodyBytes)",
        ])
        return result
    }

    /// The `cache_stats` rows, after writing the buffered counts.
    /// - Parameter day: One Pacific day, or nil for every day.
    /// - Returns: One row per endpoint and day.
    /// - Throws: A storage error.
    public func statistics(on day: PacificDay? = nil) async throws -> [CacheDailyStatistics] {
        try await flush()
        return try await storage.cacheStatistics(pacificDate: day?.key)
    }

    /// How many entries and body bytes are stored.
    /// - Returns: The totals.
    /// - Throws: A storage error.
    public func totals() async throws -> CacheTotals {
        try await storage.cacheTotals()
    }

    // MARK: Internals

    /// Whether the cache may answer `request`, or store the answer to it. A lookup passes through
    /// requests with conditional fields of their own; the answer to a request sent with the
    /// validators the cache added (`If-None-Match`, `If-Modified-Since`) may be stored.
    static func isCacheable(_ request: HTTPRequest, ignoringAddedValidators: Bool = false) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let fields = request.headerFields
        var bypassing: [HTTPField.Name] = [.range, .ifRange, .ifMatch, .ifUnmodifiedSince]
        if !ignoringAddedValidators { bypassing += ConditionalRequest.fields }
        return !bypassing.contains(where: fields.contains) && !CacheControl(fields).noStore
    }

    func retention(now: Date) -> CacheRetention {
        CacheRetention(
            maxEntries: configuration.maxEntries,
            maxTotalBodyBytes: configuration.maxTotalBodyBytes,
            expiredBeforeMs: CacheTime.milliseconds(now) - CacheTime.milliseconds(configuration.maxAge)
        )
    }

    func statisticsKey(_ endpoint: String, now: Date) -> CacheStatisticsKey {
        // Every hit is counted under its Pacific day: the day's key is worked out once a day.
        let known = today.withLock { day in day.flatMap { now >= $0.start && now < $0.end ? $0.key : nil } }
        if let known { return CacheStatisticsKey(pacificDate: known, endpoint: endpoint) }
        let day = PacificDay(containing: now)
        today.withLock { $0 = (day.start, day.nextReset, day.key) }
        return CacheStatisticsKey(pacificDate: day.key, endpoint: endpoint)
    }

    /// The live entry that answers `request`, read in one transaction.
    func stored(key: CacheKey, request: HTTPRequest, now: Date) async throws -> CachedResponse? {
        let entry = try await storage.cachedEntry(
            resourceKey: key.resourceKey, validatedSinceMs: retention(now: now).expiredBeforeMs,
            selectVariant: { candidates in Self.selectVariant(among: candidates, for: request)?.id }
        )
        return entry.map { served($0, now: now) }
    }

    /// The live entry that answers `request`; when none does, the entity tags of the resource's
    /// other stored variants, for an `If-None-Match` that lets the server pick one (RFC 9111 §4.3.2).
    func storedOrVariantTags(key: CacheKey, request: HTTPRequest, now: Date) async throws -> (CachedResponse?, [String]) {
        let tags = Mutex<[String]>([])
        let entry = try await storage.cachedEntry(
            resourceKey: key.resourceKey, validatedSinceMs: retention(now: now).expiredBeforeMs,
            selectVariant: { candidates in
                if let selected = Self.selectVariant(among: candidates, for: request) { return selected.id }
                let others = candidates.compactMap(\.etag).filter(CacheHeaders.isIntact)
                tags.withLock { $0 = Array(Set(others)).sorted() }
                return nil
            }
        )
        return (entry.map { served($0, now: now) }, entry == nil ? tags.withLock { $0 } : [])
    }

    /// A stored entry as served now, its header fields parsed once per version of the entry.
    func served(_ entry: CacheEntry, now: Date) -> CachedResponse {
        let stored = entry.metadata.headers
        if let fields = servedFields.withLock({ $0[entry.metadata.id] }), fields.source == stored {
            return CachedResponse(entry: entry, now: now, fields: fields)
        }
        let fields = ServedHeaderFields(stored)
        servedFields.withLock { memo in
            if memo.count >= Self.servedFieldsLimit { memo.removeAll(keepingCapacity: true) }
            memo[entry.metadata.id] = fields
        }
        return CachedResponse(entry: entry, now: now, fields: fields)
    }

    /// The stored variant whose `Vary` fields the request matches; the most recently validated
    /// when several do. `Vary: *` never matches.
    static func selectVariant(among candidates: [CacheEntryMetadata], for request: HTTPRequest) -> CacheEntryMetadata? {
        variants(among: candidates, matching: request).max { ($0.validatedAtMs, $0.id) < ($1.validatedAtMs, $1.id) }
    }

    /// The stored variants whose `Vary` fields the request matches. `Vary: *` never matches.
    static func variants(among candidates: [CacheEntryMetadata], matching request: HTTPRequest) -> [CacheEntryMetadata] {
        // The common case on a hit or a revalidation: one variant, stored without Vary, which
        // every request matches; no array is filtered for it.
        if candidates.count == 1, candidates[0].vary == nil, candidates[0].variantKey.isEmpty { return candidates }
        return candidates.filter { candidate in
            let vary = VaryFields(stored: candidate.vary)
            guard vary != .any else { return false }
            return CacheKey.variantKey(for: request, vary: vary.names) == candidate.variantKey
        }
    }

    /// Buffers a use and its counts; writes the buffer when it is full or old.
    func recordUse(of cached: CachedResponse, endpoint: String, counts: CacheStatisticsCounts, now: Date) async throws {
        let key = statisticsKey(endpoint, now: now)
        let (shouldFlush, toLog) = buffer.withLock { buffer -> (Bool, CacheStatisticsCounts?) in
            buffer.record(counts, for: key, at: now, touching: cached.entryID)
            let due = buffer.isDue(at: now, threshold: configuration.activityFlushThreshold,
                                   interval: configuration.activityFlushInterval)
            return (due, buffer.countOutcome(counts, endpoint: endpoint, logInterval: configuration.hitRateLogInterval))
        }
        toLog.map { logHitRate($0, endpoint: endpoint) }
        if shouldFlush { try await flush() }
    }

    /// Counts an outcome that is written by a store operation rather than buffered.
    func countOutcome(_ counts: CacheStatisticsCounts, endpoint: String) {
        let toLog = buffer.withLock {
            $0.countOutcome(counts, endpoint: endpoint, logInterval: configuration.hitRateLogInterval)
        }
        toLog.map { logHitRate($0, endpoint: endpoint) }
    }

    /// Runs a write of the store with the buffered activity; puts the activity back if it fails.
    /// - Parameters:
    ///   - now: When the write happens.
    ///   - onlyWhenNeeded: Whether the write carries the buffer only when it holds LRU touches or
    ///     is due (a store of a new answer, a `304`'s revision); otherwise it always carries all of it.
    ///   - operation: The write, given the activity it applies first in its transaction.
    func withActivity<T: Sendable>(
        now: Date, onlyWhenNeeded: Bool = false, _ operation: (CacheActivity) async throws -> T
    ) async throws -> T {
        let activity = buffer.withLock { buffer in
            onlyWhenNeeded
                ? buffer.takeWhenNeeded(at: now, threshold: configuration.activityFlushThreshold,
                                        interval: configuration.activityFlushInterval)
                : buffer.take()
        }
        do {
            return try await operation(activity)
        } catch {
            buffer.withLock { $0.restore(activity, at: now) }
            throw error
        }
    }

    private func logHitRate(_ counts: CacheStatisticsCounts, endpoint: String) {
        let answered = counts.hits + counts.revalidations
        let total = answered + counts.misses
        let rate = total == 0 ? 0 : Double(answered) / Double(total)
        logger.info("cache hit rate", metadata: [
            "cache.endpoint": "\(endpoint)",
            "cache.hits": "\(counts.hits)",
            "cache.revalidations": "\(counts.revalidations)",
            "cache.misses": "\(counts.misses)",
            "cache.stale": "\(counts.stale)",
            "cache.hit_rate": "\((rate * 10_000).rounded() / 10_000)",
        ])
    }
}

extension Duration {
    /// Whole milliseconds, for log metadata.
    fileprivate var milliseconds: Int64 { CacheTime.milliseconds(self) }
}
