import Foundation
import Synchronization

/// One window of a bucket: where its charges are written and which rows count.
///
/// Usage rows are keyed by the window's start (``key``): the local date for a calendar window
/// (`2026-11-27`, the Pacific date YouTube's quota uses, or the first of the month), the UTC
/// instant for the others (`2026-11-27T10:00:00Z`). A rolling window counts several keys, from
/// ``firstKey`` to ``key``.
public struct QuotaPeriod: Sendable, Hashable {
    /// The key a charge made now is written under.
    public var key: String
    /// The oldest key still counted: ``key`` itself except in a rolling window.
    public var firstKey: String
    /// When the window started (for a rolling window: `seconds` before now).
    public var start: Date
    /// When the units come back: the window's end, or the instant the server announced.
    public var end: Date

    /// Creates a window.
    /// - Parameters:
    ///   - key: The key charges are written under.
    ///   - firstKey: The oldest key counted; `key` when nil.
    ///   - start: When it started.
    ///   - end: When it ends.
    public init(key: String, firstKey: String? = nil, start: Date, end: Date) {
        self.key = key
        self.firstKey = firstKey ?? key
        self.start = start
        self.end = end
    }

    /// A Pacific day as a window.
    /// - Parameter day: The day.
    public init(_ day: PacificDay) {
        self.init(key: day.key, start: day.start, end: day.nextReset)
    }

    /// How long the window lasts, in seconds, from ``start`` to ``end``.
    public var length: TimeInterval { end.timeIntervalSince(start) }

    /// Whether several keys count (a rolling window).
    public var spansSeveralKeys: Bool { firstKey != key }

    /// The window in force at `now`, once the reset the server last announced is applied.
    ///
    /// A server that counts its own window (GitHub's hour starts at the first request, not at :00)
    /// says when it resets. That instant moves the end of the window it was announced in:
    ///
    /// | announced reset | window in force at `now` |
    /// |---|---|
    /// | none | the natural one |
    /// | still ahead (by at most one more window's length) | the announced window, until the reset |
    /// | passed, inside the natural window | a new window from the reset to the natural end, keyed by the reset instant |
    /// | passed before the natural window began, or far ahead (a clock set back) | the natural one |
    ///
    /// A rolling window ignores announced resets: it has no end to move.
    /// - Parameters:
    ///   - window: The bucket's window.
    ///   - now: The time of the operation.
    ///   - announcedReset: The key of the window the server's last reset was announced in, and the
    ///     reset.
    /// - Returns: The window charges are written in.
    public static func current(
        in window: QuotaWindow, at now: Date, announcedReset: (key: String, at: Date)? = nil
    ) -> QuotaPeriod {
        let natural = window.naturalPeriod(containing: now)
        guard let announced = announcedReset, !natural.spansSeveralKeys else { return natural }
        if announced.at > now {
            let length = natural.length
            guard announced.at <= natural.end.addingTimeInterval(length) else { return natural }
            return QuotaPeriod(key: announced.key, start: min(natural.start, now), end: announced.at)
        }
        // The reset has passed. If it fell inside the natural window, what was counted before it
        // belongs to the server's last window: a new one starts at the reset.
        guard announced.at > natural.start, announced.at < natural.end else { return natural }
        return QuotaPeriod(key: QuotaWindow.instantKey(announced.at), start: announced.at, end: natural.end)
    }
}

extension QuotaPeriod {
    /// The last Pacific day asked for, and that day as a window: every charge of a day asks for
    /// the same one, and making it anew means working out the day and formatting its key.
    private static let lastPacificDay = Mutex<(day: PacificDay, period: QuotaPeriod)?>(nil)

    /// The Pacific day containing `instant` and that day as a window: the same as
    /// `PacificDay(containing:)` and `QuotaPeriod(_:)`, remembered from the last call.
    /// - Parameter instant: The time of the charge.
    /// - Returns: The day, and the day as a window (from its midnight to the next).
    public static func pacificDay(containing instant: Date) -> (day: PacificDay, period: QuotaPeriod) {
        if let last = lastPacificDay.withLock({ $0 }), last.period.start <= instant, instant < last.period.end {
            return last
        }
        let day = PacificDay(containing: instant)
        let current = (day: day, period: QuotaPeriod(day))
        lastPacificDay.withLock { $0 = current }
        return current
    }
}
