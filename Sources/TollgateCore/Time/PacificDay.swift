import Foundation

/// A calendar day in Pacific time (`America/Los_Angeles`), the day a YouTube-style quota belongs to.
///
/// The quota resets at midnight Pacific time, so a day lasts 23 hours on the second Sunday of March
/// and 25 hours on the first Sunday of November. The US rules in force since 2007 are computed
/// here without a time-zone database, exactly as the `pacific_clock` view computes them in SQL:
/// daylight time runs from 02:00 PST on the second Sunday of March to 02:00 PDT on the first
/// Sunday of November.
public struct PacificDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The IANA name of the zone these days are drawn in: `America/Los_Angeles`.
    public static let timeZoneIdentifier = "America/Los_Angeles"

    /// The year, such as 2026.
    public let year: Int
    /// The month, 1 to 12.
    public let month: Int
    /// The day of the month, 1 to 31.
    public let day: Int

    /// The day that contains `instant` in Pacific time.
    /// - Parameter instant: Any instant.
    public init(containing instant: Date) {
        let seconds = Int(floor(instant.timeIntervalSince1970))
        let local = seconds + Self.utcOffsetSeconds(at: seconds)
        let days = Int(floor(Double(local) / 86_400))
        (year, month, day) = CivilDate.fromDays(days)
    }

    /// Reads a `YYYY-MM-DD` key.
    /// - Parameter key: A date such as `2026-11-01`; nil when it is not a valid date.
    public init?(key: String) {
        let parts = key.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1...12).contains(month), (1...CivilDate.daysInMonth(year: year, month: month)).contains(day)
        else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    private init(daysSinceEpoch: Int) {
        (year, month, day) = CivilDate.fromDays(daysSinceEpoch)
    }

    /// The `YYYY-MM-DD` key stored in the database.
    public var key: String {
        guard (0...9999).contains(year) else {
            func pad(_ value: Int, _ width: Int) -> String {
                let text = String(value)
                return String(repeating: "0", count: max(0, width - text.count)) + text
            }
            return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
        }
        // Ten bytes written in place: an admission formats its day's key several times.
        return String(unsafeUninitializedCapacity: 10) { buffer in
            func write(_ value: Int, digits: Int, endingAt end: Int) {
                var remaining = value
                for position in (end - digits..<end).reversed() {
                    buffer[position] = UInt8(ascii: "0") + UInt8(remaining % 10)
                    remaining /= 10
                }
            }
            write(year, digits: 4, endingAt: 4)
            buffer[4] = UInt8(ascii: "-")
            write(month, digits: 2, endingAt: 7)
            buffer[7] = UInt8(ascii: "-")
            write(day, digits: 2, endingAt: 10)
            return 10
        }
    }

    public var description: String { key }

    /// The instant this day starts: midnight Pacific time.
    public var start: Date {
        let localMidnight = daysSinceEpoch * 86_400
        // Midnight is never inside a DST gap (changes happen at 02:00), so the offset in force one
        // standard-time guess later is the offset at midnight.
        let standardGuess = localMidnight + 8 * 3600
        return Date(timeIntervalSince1970: TimeInterval(localMidnight - Self.utcOffsetSeconds(at: standardGuess)))
    }

    /// The instant the next day starts: when a daily quota resets.
    public var nextReset: Date { next.start }

    /// The following day.
    public var next: PacificDay { PacificDay(daysSinceEpoch: daysSinceEpoch + 1) }

    /// The day before.
    public var previous: PacificDay { PacificDay(daysSinceEpoch: daysSinceEpoch - 1) }

    /// How long this day lasts: 24 hours, 23 on the day clocks spring forward, 25 when they fall back.
    public var length: Duration { .seconds(nextReset.timeIntervalSince(start)) }

    public static func < (lhs: PacificDay, rhs: PacificDay) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    private var daysSinceEpoch: Int { CivilDate.days(year: year, month: month, day: day) }

    /// The offset from UTC in force at `instant`: -7 hours in daylight time, -8 otherwise.
    /// - Parameter instant: Any instant.
    /// - Returns: The offset in seconds.
    public static func utcOffset(at instant: Date) -> Int {
        utcOffsetSeconds(at: Int(floor(instant.timeIntervalSince1970)))
    }

    private static func utcOffsetSeconds(at unixSeconds: Int) -> Int {
        let year = CivilDate.fromDays(Int(floor(Double(unixSeconds) / 86_400))).year
        // Second Sunday of March, 02:00 PST = 10:00 UTC; first Sunday of November, 02:00 PDT = 09:00 UTC.
        let daylightStart = CivilDate.firstSunday(onOrAfter: CivilDate.days(year: year, month: 3, day: 8)) * 86_400 + 10 * 3600
        let daylightEnd = CivilDate.firstSunday(onOrAfter: CivilDate.days(year: year, month: 11, day: 1)) * 86_400 + 9 * 3600
        return (daylightStart..<daylightEnd).contains(unixSeconds) ? -7 * 3600 : -8 * 3600
    }
}

/// Proleptic Gregorian calendar arithmetic on days since 1970-01-01 (Howard Hinnant's algorithms),
/// shared by the package's date code (Pacific days here, HTTP dates in the cache).
package enum CivilDate {
    package static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    package static func fromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// 1970-01-01 was a Thursday; Sunday is 0.
    package static func weekday(_ days: Int) -> Int {
        ((days % 7) + 7 + 4) % 7
    }

    package static func firstSunday(onOrAfter days: Int) -> Int {
        days + (7 - weekday(days)) % 7
    }

    package static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
