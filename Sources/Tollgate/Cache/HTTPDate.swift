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
        guard (1...9999).contains(year), (1...CivilDate.daysInMonth(year: year, month: month)).contains(day) else { return nil }
        let seconds = Int64(CivilDate.days(year: year, month: month, day: day)) * 86_400
            + Int64(hour * 3600 + minute * 60 + second)
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
        let monthName = months[month - 1].prefix(1).uppercased() + months[month - 1].dropFirst()
        return "\(weekday), \(pad(day)) \(monthName) \(year) \(pad(secondOfDay / 3600)):"
            + "\(pad(secondOfDay / 60 % 60)):\(pad(secondOfDay % 60)) GMT"
    }
}
