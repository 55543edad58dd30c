import Foundation

/// A `Retry-After` header value (RFC 9110 §10.2.3): a number of seconds, or an HTTP date.
///
/// ```swift
/// RetryAfter(headerValue: "120")                            // .seconds(120)
/// RetryAfter(headerValue: "Wed, 21 Oct 2026 07:28:00 GMT")  // .date(…)
/// RetryAfter(headerValue: "soon")                           // nil: ignored
/// ```
public enum RetryAfter: Sendable, Hashable {
    /// `delta-seconds`: wait this many seconds.
    case seconds(Int)
    /// `HTTP-date`: wait until then.
    case date(Date)

    /// Parses a header value; anything that is neither form is ignored.
    ///
    /// Accepts non-negative whole seconds and the three date formats RFC 9110 requires a recipient
    /// to accept (IMF-fixdate, RFC 850, asctime).
    /// - Parameter headerValue: The field value.
    /// - Returns: The value, or nil when the field is malformed.
    public init?(headerValue: String) {
        let value = headerValue.trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty else { return nil }
        if value.allSatisfy(\.isASCIIDigit) {
            // More digits than an Int holds is still "a very long time", not garbage.
            self = .seconds(Int(value) ?? Int.max)
            return
        }
        guard let date = HTTPDate.parse(value) else { return nil }
        self = .date(date)
    }

    /// How long to wait from `now`.
    /// - Parameter now: The current time.
    /// - Returns: The wait; zero for a date already past.
    public func delay(from now: Date) -> Duration {
        switch self {
        case .seconds(let seconds):
            return .seconds(seconds)
        case .date(let date):
            let interval = date.timeIntervalSince(now)
            guard interval > 0 else { return .zero }
            return .milliseconds(Int64(min(interval, Double(Int64.max / 1000)) * 1000))
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
