import Foundation

/// Parses HTTP dates (RFC 9110 §5.6.7) strictly: exactly IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`),
/// the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`),
/// which a recipient must accept. Anything else is nil: a two-digit year in the IMF form, a missing
/// comma, dashes, doubled spaces, a one-digit hour, lowercase names, another time zone, `0`. A cache
/// reads an invalid `Expires` as a time in the past (RFC 9111 §5.3), so nil means "already expired".
package enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let monthNames: [[UInt8]] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                                "Nov", "Dec"].map { Array($0.utf8) }
    private static let dayNames: [[UInt8]] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) }
    private static let longDayNames: [[UInt8]] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
                                                  "Sunday"].map { Array($0.utf8) }

    /// Parses one HTTP date.
    /// - Parameters:
    ///   - text: The field value; surrounding spaces and tabs are not part of it.
    ///   - now: The current time, for the century of an RFC 850 two-digit year (RFC 9110 §5.6.7:
    ///     more than 50 years ahead means the past century).
    /// - Returns: The instant, or nil when the text is not exactly one of the three forms.
    package static func parse(_ text: String, now: Date? = nil) -> Date? {
        let value = Array(text.trimmingOptionalWhitespace.utf8)
        return imfFixdate(value) ?? rfc850(value, now: now) ?? asctime(value)
    }

    /// `day-name "," SP 2DIGIT SP month SP 4DIGIT SP 2DIGIT ":" 2DIGIT ":" 2DIGIT SP "GMT"`.
    private static func imfFixdate(_ b: [UInt8]) -> Date? {
        guard b.count == 29, name(b[0..<3], in: dayNames) != nil, b[3] == UInt8(ascii: ","), b[4] == 0x20,
              let day = digits(b, 5, 2), b[7] == 0x20, let month = month(b, 8), b[11] == 0x20,
              let year = digits(b, 12, 4), b[16] == 0x20, let time = timeOfDay(b, 17), b[25] == 0x20,
              b[26..<29].elementsEqual("GMT".utf8)
        else { return nil }
        return instant(year: year, month: month, day: day, time: time)
    }

    /// `day-name-l "," SP 2DIGIT "-" month "-" 2DIGIT SP time-of-day SP "GMT"`.
    private static func rfc850(_ b: [UInt8], now: Date?) -> Date? {
        guard let comma = b.firstIndex(of: UInt8(ascii: ",")), name(b[0..<comma], in: longDayNames) != nil else { return nil }
        let s = comma + 1
        guard b.count == s + 23, b[s] == 0x20, let day = digits(b, s + 1, 2), b[s + 3] == UInt8(ascii: "-"),
              let month = month(b, s + 4), b[s + 7] == UInt8(ascii: "-"), let shortYear = digits(b, s + 8, 2),
              b[s + 10] == 0x20, let time = timeOfDay(b, s + 11), b[s + 19] == 0x20,
              b[(s + 20)..<(s + 23)].elementsEqual("GMT".utf8)
        else { return nil }
        let currentYear = now.map { CivilDate.fromDays(Int(floor($0.timeIntervalSince1970 / 86_400))).year } ?? 2000
        var year = currentYear - currentYear % 100 + shortYear
        if year > currentYear + 50 { year -= 100 }
        return instant(year: year, month: month, day: day, time: time)
    }

    /// `day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP 4DIGIT`.
    private static func asctime(_ b: [UInt8]) -> Date? {
        guard b.count == 24, name(b[0..<3], in: dayNames) != nil, b[3] == 0x20, let month = month(b, 4), b[7] == 0x20
        else { return nil }
        let day: Int
        if b[8] == 0x20, let one = digits(b, 9, 1) { day = one } else if let two = digits(b, 8, 2) { day = two } else { return nil }
        guard b[10] == 0x20, let time = timeOfDay(b, 11), b[19] == 0x20, let year = digits(b, 20, 4) else { return nil }
        return instant(year: year, month: month, day: day, time: time)
    }

    private static func digits(_ b: [UInt8], _ start: Int, _ count: Int) -> Int? {
        guard start + count <= b.count else { return nil }
        var value = 0
        for byte in b[start..<(start + count)] {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    /// Where `bytes` is in `names`, compared in place: no array per comparison.
    private static func name(_ bytes: ArraySlice<UInt8>, in names: [[UInt8]]) -> Int? {
        names.firstIndex { $0.elementsEqual(bytes) }
    }

    private static func month(_ b: [UInt8], _ start: Int) -> Int? {
        guard start + 3 <= b.count, let index = name(b[start..<(start + 3)], in: monthNames) else { return nil }
        return index + 1
    }

    /// `2DIGIT ":" 2DIGIT ":" 2DIGIT`, in range (a leap second allowed).
    private static func timeOfDay(_ b: [UInt8], _ start: Int) -> Int? {
        guard let hour = digits(b, start, 2), start + 8 <= b.count, b[start + 2] == UInt8(ascii: ":"),
              let minute = digits(b, start + 3, 2), b[start + 5] == UInt8(ascii: ":"), let second = digits(b, start + 6, 2),
              hour <= 23, minute <= 59, second <= 60
        else { return nil }
        return hour * 3600 + minute * 60 + second
    }

    private static func instant(year: Int, month: Int, day: Int, time: Int) -> Date? {
        guard (1...9999).contains(year), (1...CivilDate.daysInMonth(year: year, month: month)).contains(day) else { return nil }
        let seconds = Int64(CivilDate.days(year: year, month: month, day: day)) * 86_400 + Int64(time)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// Formats an IMF-fixdate, for `If-Modified-Since` and tests.
    static func format(_ date: Date) -> String {
        let seconds = Int64(floor(date.timeIntervalSince1970))
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let secondOfDay = Int(seconds - Int64(days) * 86_400)
        let (year, month, day) = CivilDate.fromDays(days)
        let weekday = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][CivilDate.weekday(days)]
        func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        func pad4(_ value: Int) -> String { String(repeating: "0", count: max(0, 4 - "\(value)".count)) + "\(value)" }
        let monthName = months[month - 1].prefix(1).uppercased() + months[month - 1].dropFirst()
        return "\(weekday), \(pad(day)) \(monthName) \(pad4(year)) \(pad(secondOfDay / 3600)):"
            + "\(pad(secondOfDay / 60 % 60)):\(pad(secondOfDay % 60)) GMT"
    }
}
