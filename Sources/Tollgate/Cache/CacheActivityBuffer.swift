import Foundation
import Synchronization

/// Fresh hits and stale serves gathered in memory until the next write of the cache, plus the
/// per-endpoint counts since this process started that the hit-rate log line reports.
struct CacheActivityBuffer: Sendable {
    /// What the next write of the store applies first.
    var activity = CacheActivity()
    /// Uses buffered since the last write.
    var pendingUses = 0
    /// When the oldest buffered use happened.
    var oldestPendingAt: Date?
    /// Outcomes per endpoint since this process started, for the hit-rate log line.
    var outcomes: [String: CacheStatisticsCounts] = [:]

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
