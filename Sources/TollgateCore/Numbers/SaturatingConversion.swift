import Foundation

/// Numbers from outside — a header's reset, a description's duration, a body's token count — turned
/// into integers without trapping.
///
/// `Int64(someDouble)` traps when the value is out of range or not a number, and one upstream header
/// such as `X-RateLimit-Reset: 9999999999999999` reaches such a conversion. Every conversion of a
/// number that came from outside goes through here: out-of-range values saturate at the type's
/// bounds, and NaN becomes zero, so a hostile value is at worst absurd, never fatal.
public enum SaturatingConversion {
    /// `value` as an `Int64`, rounded down; the nearest bound past either end, zero for NaN.
    /// - Parameter value: Any double.
    /// - Returns: The integer.
    public static func int64(_ value: Double) -> Int64 {
        guard !value.isNaN else { return 0 }
        // Int64.max is not exactly representable as a Double: 2^63 is the first value out of range.
        if value >= 9_223_372_036_854_775_808.0 { return .max }
        if value < -9_223_372_036_854_775_808.0 { return .min }
        return Int64(value.rounded(.down))
    }

    /// `value` as an `Int`, rounded down; the nearest bound past either end, zero for NaN.
    /// - Parameter value: Any double.
    /// - Returns: The integer.
    public static func int(_ value: Double) -> Int {
        Int(int64(value))
    }

    /// The milliseconds of `seconds`, rounded down and saturating.
    /// - Parameter seconds: Any interval.
    /// - Returns: The milliseconds.
    public static func milliseconds(_ seconds: TimeInterval) -> Int64 {
        int64(seconds * 1000)
    }

    /// A `Duration` of `seconds`, saturating at about 292 years either way (`Duration`'s own range
    /// is larger; ours keeps every later conversion to milliseconds or nanoseconds safe).
    /// - Parameter seconds: Any interval.
    /// - Returns: The duration; zero for NaN.
    public static func duration(seconds: TimeInterval) -> Duration {
        .nanoseconds(int64(min(max(seconds, -maximumDurationSeconds), maximumDurationSeconds) * 1_000_000_000))
    }

    /// The longest duration ``duration(seconds:)`` makes, in seconds: nanoseconds fit an `Int64`.
    public static let maximumDurationSeconds: TimeInterval = 9_223_372_036
}

extension Date {
    /// Milliseconds since 1970, rounded down, as the stores keep instants: saturating, so a date
    /// read from a hostile header cannot trap.
    public var millisecondsSince1970: Int64 {
        SaturatingConversion.milliseconds(timeIntervalSince1970)
    }

    /// The instant `milliseconds` after 1970.
    /// - Parameter milliseconds: Milliseconds since 1970.
    public init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }
}
