import Foundation

extension PacificDay {
    /// `instant` as Pacific wall-clock time with its zone, such as `2026-11-22 00:00 PST`: how
    /// messages tell users when a quota resets.
    /// - Parameter instant: Any instant.
    /// - Returns: The local date, hours and minutes, and `PST` or `PDT`.
    public static func localTimeDescription(of instant: Date) -> String {
        let offset = utcOffset(at: instant)
        let local = Int(floor(instant.timeIntervalSince1970)) + offset
        let day = PacificDay(containing: instant)
        let secondsIntoDay = ((local % 86_400) + 86_400) % 86_400
        let hours = secondsIntoDay / 3600
        let minutes = (secondsIntoDay % 3600) / 60
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(day.key) \(two(hours)):\(two(minutes)) \(offset == -7 * 3600 ? "PDT" : "PST")"
    }
}
