import Foundation

/// Parses HTTP dates (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms.
/// Anything else, including `0` and out-of-range fields, is nil: an invalid `Expires` means stale.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    static func parse(_ text: String) -> Date? {
        var tokens = text.split(whereSeparator: { " ,-:\t".contains($0) }).map { $0.lowercased() }
        guard tokens.count >= 7 else { return nil }
        if let first = tokens.first, first.allSatisfy(\.isLetter), !months.contains(first) {
            tokens.removeFirst() // the weekday
        }
        let day, month, year, hour, minute, second: Int?
        if let index = months.firstIndex(of: tokens[0]) {
            // asctime: Nov  6 08:49:37 1994
            guard tokens.count >= 6 else { return nil }
            month = index + 1
            (day, hour, minute, second, year) = (Int(tokens[1]), Int(tokens[2]), Int(tokens[3]), Int(tokens[4]), Int(tokens[5]))
        } else {
            // IMF-fixdate (06 Nov 1994 08:49:37 GMT) and RFC 850 (06-Nov-94 08:49:37 GMT).
            guard tokens.count >= 7, tokens[6] == "gmt", let index = months.firstIndex(of: tokens[1]) else { return nil }
            month = index + 1
            (day, year, hour, minute, second) = (Int(tokens[0]), Int(tokens[2]), Int(tokens[3]), Int(tokens[4]), Int(tokens[5]))
        }
        guard var year, let month, let day, let hour, let minute, let second,
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        if year < 100 { year += year < 70 ? 2000 : 1900 }
        guard (1...9999).contains(year), (1...daysInMonth(year: year, month: month)).contains(day) else { return nil }
        let seconds = Int64(daysFromCivil(year: year, month: month, day: day)) * 86_400
            + Int64(hour * 3600 + minute * 60 + second)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// Formats an IMF-fixdate, for `If-Modified-Since` and tests.
    static func format(_ date: Date) -> String {
        let seconds = Int64(floor(date.timeIntervalSince1970))
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let secondOfDay = Int(seconds - Int64(days) * 86_400)
        let (year, month, day) = civilFromDays(days)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
        func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let monthName = months[month - 1].prefix(1).uppercased() + months[month - 1].dropFirst()
        return "\(weekday), \(pad(day)) \(monthName) \(year) \(pad(secondOfDay / 3600)):"
            + "\(pad(secondOfDay / 60 % 60)):\(pad(secondOfDay % 60)) GMT"
    }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days_from_civil and civil_from_days.
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
