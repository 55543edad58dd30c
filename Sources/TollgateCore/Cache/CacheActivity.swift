/// Which row of the daily cache statistics a count belongs to.
public struct CacheStatisticsKey: Sendable, Hashable {
    /// The Pacific date, `YYYY-MM-DD` (see `PacificDay.key`).
    public var pacificDate: String
    /// The endpoint, as the gate names it.
    public var endpoint: String

    /// Creates a key.
    /// - Parameters:
    ///   - pacificDate: The Pacific date key.
    ///   - endpoint: The endpoint.
    public init(pacificDate: String, endpoint: String) {
        self.pacificDate = pacificDate
        self.endpoint = endpoint
    }
}

/// Counts to add to one row of the daily cache statistics.
public struct CacheStatisticsCounts: Sendable, Hashable {
    /// Fresh responses served with no request.
    public var hits: Int64 = 0
    /// Stored responses confirmed by a `304`.
    public var revalidations: Int64 = 0
    /// Requests answered by the network with a full response.
    public var misses: Int64 = 0
    /// Stored responses served stale (circuit open, quota spent, throttled).
    public var stale: Int64 = 0
    /// Body bytes served from the cache instead of the network.
    public var bytesSaved: Int64 = 0
    /// Answers that waited for an identical request's answer instead of sending their own.
    public var coalesced: Int64 = 0

    /// Creates counts.
    /// - Parameters:
    ///   - hits: Fresh hits.
    ///   - revalidations: `304` revalidations.
    ///   - misses: Misses.
    ///   - stale: Stale serves.
    ///   - bytesSaved: Body bytes served from the cache.
    public init(
        hits: Int64 = 0, revalidations: Int64 = 0, misses: Int64 = 0, stale: Int64 = 0, bytesSaved: Int64 = 0,
        coalesced: Int64 = 0
    ) {
        self.hits = hits
        self.revalidations = revalidations
        self.misses = misses
        self.stale = stale
        self.bytesSaved = bytesSaved
        self.coalesced = coalesced
    }

    /// Whether every count is zero.
    public var isZero: Bool { self == CacheStatisticsCounts() }

    /// Adds `other` to these counts.
    /// - Parameter other: The counts to add.
    public mutating func add(_ other: CacheStatisticsCounts) {
        hits += other.hits
        revalidations += other.revalidations
        misses += other.misses
        stale += other.stale
        bytesSaved += other.bytesSaved
        coalesced += other.coalesced
    }
}

/// A use of a stored entry that moves it up the LRU order.
public struct CacheTouch: Sendable, Hashable {
    /// When it was last used (milliseconds since 1970).
    public var lastAccessMs: Int64
    /// How many uses to add to its hit count.
    public var hits: Int64

    /// Creates a touch.
    /// - Parameters:
    ///   - lastAccessMs: When the entry was last used.
    ///   - hits: Uses to add to its hit count.
    public init(lastAccessMs: Int64, hits: Int64) {
        self.lastAccessMs = lastAccessMs
        self.hits = hits
    }
}

/// Cache bookkeeping gathered in memory and written in one go: LRU touches and statistics.
///
/// Fresh hits are the hot path of the cache, so they do not each pay for a write transaction:
/// the service buffers them here and every write operation of the store applies the buffer first,
/// in the same transaction, so an eviction decision always sees every touch.
public struct CacheActivity: Sendable, Hashable {
    /// Touches by entry id.
    public var touches: [Int64: CacheTouch] = [:]
    /// Counts by statistics row.
    public var statistics: [CacheStatisticsKey: CacheStatisticsCounts] = [:]

    /// Creates an empty activity record.
    public init() {}

    /// Whether there is nothing to write.
    public var isEmpty: Bool { touches.isEmpty && statistics.isEmpty }

    /// Records a use of an entry.
    /// - Parameters:
    ///   - entryID: The entry.
    ///   - atMs: When it was used.
    ///   - hits: Uses to add to its hit count.
    public mutating func touch(_ entryID: Int64, atMs: Int64, hits: Int64 = 1) {
        let previous = touches[entryID]
        touches[entryID] = CacheTouch(
            lastAccessMs: max(previous?.lastAccessMs ?? atMs, atMs), hits: (previous?.hits ?? 0) + hits
        )
    }

    /// Adds counts to a statistics row.
    /// - Parameters:
    ///   - counts: The counts.
    ///   - key: The row.
    public mutating func count(_ counts: CacheStatisticsCounts, for key: CacheStatisticsKey) {
        statistics[key, default: CacheStatisticsCounts()].add(counts)
    }

    /// Adds everything `other` recorded.
    /// - Parameter other: Another record, such as one whose write failed.
    public mutating func merge(_ other: CacheActivity) {
        for (id, touch) in other.touches {
            self.touch(id, atMs: touch.lastAccessMs, hits: touch.hits)
        }
        for (key, counts) in other.statistics {
            count(counts, for: key)
        }
    }
}
