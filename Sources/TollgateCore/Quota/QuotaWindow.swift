import Foundation

/// The stretch of time a bucket's limit counts over.
///
/// YouTube's quota is a calendar day in Pacific time (``pacificDay``, the default); GitHub counts
/// core requests by the hour, LLM APIs requests and tokens by the minute, some APIs by the month
/// or over the last N seconds. Usage is kept per window: each `quota_usage` row is keyed by the
/// start of the window it belongs to (``QuotaPeriod/key``).
///
/// The window is stored with its bucket as its ``specification`` text, such as `hour` or
/// `day Europe/Berlin`, so `sqlite3` and `psql` show it.
public enum QuotaWindow: Sendable, Hashable, CustomStringConvertible {
    /// A calendar day in a time zone, from midnight to midnight (23 or 25 hours across a change of
    /// daylight time).
    case day(timeZone: String)
    /// A clock hour, from :00 to :00.
    case hour
    /// A clock minute.
    case minute
    /// A calendar month in a time zone, from midnight on the first.
    case month(timeZone: String)
    /// The last `seconds` seconds, sliding: a charge counts until that long after it was made
    /// (counted in slices of a sixtieth of the window, at least one second, so a charge may count
    /// up to one slice longer, never shorter).
    case rolling(seconds: Int)

    /// YouTube's window, and the default: a calendar day in `America/Los_Angeles`.
    public static let pacificDay = QuotaWindow.day(timeZone: PacificDay.timeZoneIdentifier)

    /// The default window's text, made once: every admission compares it with the stored one.
    private static let pacificDaySpecification = "day \(PacificDay.timeZoneIdentifier)"

    /// The text stored with the bucket: `day America/Los_Angeles`, `hour`, `minute`,
    /// `month Europe/Paris`, `rolling 3600`.
    public var specification: String {
        switch self {
        case .day(let zone) where zone == PacificDay.timeZoneIdentifier: Self.pacificDaySpecification
        case .day(let zone): "day \(zone)"
        case .hour: "hour"
        case .minute: "minute"
        case .month(let zone): "month \(zone)"
        case .rolling(let seconds): "rolling \(seconds)"
        }
    }

    public var description: String { specification }

    /// Reads a ``specification`` back.
    /// - Parameter specification: Text such as `hour` or `day America/Los_Angeles`.
    /// - Returns: Nil when the text names no window, an unknown time zone, or a rolling length
    ///   outside ``rollingSeconds``.
    public init?(specification: String) {
        let parts = specification.split(separator: " ", maxSplits: 1).map(String.init)
        switch (parts.first, parts.count) {
        case ("hour", 1): self = .hour
        case ("minute", 1): self = .minute
        case ("day", 2):
            guard Self.isKnownTimeZone(parts[1]) else { return nil }
            self = .day(timeZone: parts[1])
        case ("month", 2):
            guard Self.isKnownTimeZone(parts[1]) else { return nil }
            self = .month(timeZone: parts[1])
        case ("rolling", 2):
            guard let seconds = Int(parts[1]), Self.rollingSeconds.contains(seconds) else { return nil }
            self = .rolling(seconds: seconds)
        default: return nil
        }
    }

    /// The lengths a rolling window may have: one second to a year.
    public static let rollingSeconds: ClosedRange<Int> = 1...(366 * 86_400)

    /// Whether `name` is an IANA time zone this machine's time-zone database knows, such as
    /// `Europe/Berlin`. `America/Los_Angeles` is known without one (``PacificDay``).
    public static func isKnownTimeZone(_ name: String) -> Bool {
        if name == PacificDay.timeZoneIdentifier { return true }
        // TimeZone(identifier:) also accepts abbreviations such as "PST": only full names are kept,
        // so the stored text means the same on every machine.
        return (name.contains("/") || name == "UTC") && TimeZone(identifier: name) != nil
    }

    /// Whether this is the Pacific calendar day, whose keys are the `pacific_date` the
    /// `quota_today` view reads.
    public var isPacificDay: Bool {
        if case .day(let zone) = self { return zone == PacificDay.timeZoneIdentifier }
        return false
    }

    /// The window that contains `instant`, as the calendar or the clock draws it (before any
    /// reset the server announced: see ``QuotaPeriod/current(in:at:announcedReset:)``).
    /// - Parameter instant: Any instant.
    /// - Returns: Its window.
    public func naturalPeriod(containing instant: Date) -> QuotaPeriod {
        switch self {
        case .day where isPacificDay:
            let day = PacificDay(containing: instant)
            return QuotaPeriod(key: day.key, start: day.start, end: day.nextReset)
        case .day(let zone):
            let calendar = Self.calendar(in: zone)
            let start = calendar.startOfDay(for: instant)
            let end = calendar.date(byAdding: .day, value: 1, to: start) ?? start.addingTimeInterval(86_400)
            return QuotaPeriod(key: Self.dateKey(start, calendar: calendar), start: start, end: end)
        case .month(let zone):
            let calendar = Self.calendar(in: zone)
            let start = calendar.dateInterval(of: .month, for: instant)?.start ?? calendar.startOfDay(for: instant)
            let end = calendar.date(byAdding: .month, value: 1, to: start) ?? start.addingTimeInterval(31 * 86_400)
            return QuotaPeriod(key: Self.dateKey(start, calendar: calendar), start: start, end: end)
        case .hour:
            return Self.fixed(instant, seconds: 3600)
        case .minute:
            return Self.fixed(instant, seconds: 60)
        case .rolling(let seconds):
            let slice = Self.slice(ofRolling: seconds)
            let current = Self.fixed(instant, seconds: slice)
            // The oldest slice still counted: the one holding the instant `seconds` ago.
            let oldest = Self.fixed(instant.addingTimeInterval(-TimeInterval(seconds)), seconds: slice)
            return QuotaPeriod(
                key: current.key, firstKey: oldest.key, start: instant.addingTimeInterval(-TimeInterval(seconds)),
                end: oldest.end.addingTimeInterval(TimeInterval(seconds))
            )
        }
    }

    /// The length of a rolling window's slices: a sixtieth of the window, at least a second.
    public static func slice(ofRolling seconds: Int) -> Int { max(1, seconds / 60) }

    /// The key of a window that starts at `instant` and is not a calendar one: UTC, ISO 8601,
    /// to the second, such as `2026-11-27T10:00:00Z`. Keys of one bucket sort as their starts do.
    public static func instantKey(_ instant: Date) -> String {
        let seconds = Int(floor(instant.timeIntervalSince1970))
        let days = Int(floor(Double(seconds) / 86_400))
        let (year, month, day) = CivilDate.fromDays(days)
        let secondOfDay = seconds - days * 86_400
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))Z"
    }

    private static func fixed(_ instant: Date, seconds length: Int) -> QuotaPeriod {
        let seconds = Int(floor(instant.timeIntervalSince1970))
        let start = Int(floor(Double(seconds) / Double(length))) * length
        let startDate = Date(timeIntervalSince1970: TimeInterval(start))
        return QuotaPeriod(key: instantKey(startDate), start: startDate,
                           end: Date(timeIntervalSince1970: TimeInterval(start + length)))
    }

    private static func calendar(in zone: String) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        // Zones are checked where a window is configured (isKnownTimeZone); UTC is never reached
        // for a configured one.
        calendar.timeZone = TimeZone(identifier: zone) ?? TimeZone(secondsFromGMT: 0)!
        return calendar
    }

    private static func dateKey(_ start: Date, calendar: Calendar) -> String {
        let parts = calendar.dateComponents([.year, .month, .day], from: start)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.year ?? 0, 4))-\(pad(parts.month ?? 1, 2))-\(pad(parts.day ?? 1, 2))"
    }
}
