import Foundation
import Synchronization

/// Fresh hits, stale serves and misses gathered in memory until they are due to be written, plus
/// the per-endpoint counts since this process started that the hit-rate log line reports.
struct CacheActivityBuffer: Sendable {
    /// What the next write of the store applies first.
    var activity = CacheActivity()
    /// Uses buffered since the last write.
    var pendingUses = 0
    /// When the oldest buffered use happened.
    var oldestPendingAt: Date?
    /// Outcomes per endpoint since this process started, for the hit-rate log line.
    var outcomes: [String: CacheStatisticsCounts] = [:]

    /// Buffers a use's counts, and its LRU touch when it used a stored entry.
    mutating func record(_ counts: CacheStatisticsCounts, for key: CacheStatisticsKey, at now: Date,
                         touching entryID: Int64? = nil) {
        if let entryID { activity.touch(entryID, atMs: CacheTime.milliseconds(now)) }
        activity.count(counts, for: key)
        pendingUses += 1
        oldestPendingAt = min(oldestPendingAt ?? now, now)
    }

    /// Whether the buffer is due to be written: `threshold` uses have gathered, or the oldest of
    /// them is `interval` old.
    func isDue(at now: Date, threshold: Int, interval: Duration) -> Bool {
        guard let oldestPendingAt else { return false }
        return pendingUses >= threshold || now.timeIntervalSince(oldestPendingAt) >= interval.timeInterval
    }

    /// Takes what a store of a new answer or a `304`'s revision carries: the whole buffer when it
    /// holds LRU touches (a store may evict, and its choice of victim must see every use) or is
    /// due; nothing otherwise, so that a run of misses or revalidations writes their counts once
    /// per `threshold`, not a statistics row each.
    mutating func takeWhenNeeded(at now: Date, threshold: Int, interval: Duration) -> CacheActivity {
        guard !activity.touches.isEmpty || isDue(at: now, threshold: threshold, interval: interval) else {
            return CacheActivity()
        }
        return take()
    }

    /// Takes the activity to write, leaving the buffer empty.
    mutating func take() -> CacheActivity {
        defer {
            activity = CacheActivity()
            pendingUses = 0
            oldestPendingAt = nil
        }
        return activity
    }

    /// Puts back activity whose write failed, so nothing is lost.
    mutating func restore(_ failed: CacheActivity, at now: Date) {
        guard !failed.isEmpty else { return }
        activity.merge(failed)
        pendingUses += max(failed.touches.count, 1)
        oldestPendingAt = min(oldestPendingAt ?? now, now)
    }

    /// Counts one outcome for the log; returns the counts to log when the interval is reached.
    mutating func countOutcome(_ counts: CacheStatisticsCounts, endpoint: String, logInterval: Int) -> CacheStatisticsCounts? {
        outcomes[endpoint, default: CacheStatisticsCounts()].add(counts)
        guard logInterval > 0, let total = outcomes[endpoint] else { return nil }
        let events = total.hits + total.revalidations + total.misses + total.stale
        return events % Int64(logInterval) == 0 ? total : nil
    }
}
