import Foundation

/// One write the quota machine (``QuotaStateMachine``) asks a store to make, in order, inside the
/// transaction it read the rows in. Each store translates it to its own SQL; none decides anything.
public enum QuotaWrite: Sendable, Hashable {
    /// Create the bucket's row from the configuration.
    case createBucket(limit: Int, windowSpecification: String)
    /// Store the configuration's new limit on a configuration-owned row.
    case storeLimit(Int)
    /// Store a new window; the old window's announced reset and pacing are dropped.
    case changeWindow(specification: String)
    /// Note the window the bucket charges in on its row, for the `quota_windows` view.
    case noteWindow(QuotaPeriod)
    /// Append an event that changes no total (a `limit` event, on the endpoint `*`).
    case event(kind: QuotaEventKind, key: String, detail: String)
    /// Charge `units` to `endpoint` under `key`: a `charge` event and the usage totals.
    case charge(key: String, endpoint: String, units: Int)
    /// Remember a paced charge's time and window, so the next one waits its slot.
    case markPaced(atMs: Int64, key: String)
    /// Remember the highest warning level reported in the window `key`.
    case recordWarning(key: String, percent: Int)
    /// Move the window `key`'s end to the reset the server announced.
    case announceReset(key: String, resetMs: Int64)
    /// Add `units` to the whole bucket (endpoint `*`) under `key`, with an `announced` event.
    case followAnnouncement(key: String, units: Int, detail: String)
    /// Close the bucket until `untilMs`, with an `exhausted` event under `key` on `endpoint`.
    case markExhausted(key: String, untilMs: Int64, endpoint: String, detail: String)
}
