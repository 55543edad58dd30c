import Foundation

/// A bucket's burn rate over the last hour and, at that rate, whether it runs out before the
/// next Pacific midnight.
public struct QuotaForecast: Sendable, Hashable {
    /// The bucket.
    public var bucket: String
    /// Net units charged per hour over the window looked at.
    public var unitsPerHour: Double
    /// Units left today.
    public var remaining: Int
    /// When the bucket runs out at this rate; nil when it lasts until the reset.
    public var runsOutAt: Date?
    /// The next Pacific midnight.
    public var resetsAt: Date

    /// Creates a forecast.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - unitsPerHour: The burn rate.
    ///   - remaining: Units left today.
    ///   - runsOutAt: When it runs out at this rate, if before the reset.
    ///   - resetsAt: The next reset.
    public init(bucket: String, unitsPerHour: Double, remaining: Int, runsOutAt: Date?, resetsAt: Date) {
        self.bucket = bucket
        self.unitsPerHour = unitsPerHour
        self.remaining = remaining
        self.runsOutAt = runsOutAt
        self.resetsAt = resetsAt
    }

    /// Projects a bucket's burn rate: when, at `unitsPerHour`, its `remaining` units run out, if
    /// that comes before the reset. The one rule ``QuotaLedger/forecast(over:)`` and the operators'
    /// listener both follow.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - unitsPerHour: Net units charged per hour over the window looked at.
    ///   - remaining: Units left today.
    ///   - now: The instant the projection starts from.
    ///   - resetsAt: The next reset.
    /// - Returns: The forecast.
    public static func projecting(
        bucket: String, unitsPerHour: Double, remaining: Int, from now: Date, resetsAt: Date
    ) -> QuotaForecast {
        var runsOutAt: Date?
        if unitsPerHour > 0 {
            let at = now.addingTimeInterval(Double(max(remaining, 0)) / unitsPerHour * 3600)
            if at < resetsAt { runsOutAt = at }
        }
        return QuotaForecast(bucket: bucket, unitsPerHour: unitsPerHour, remaining: remaining, runsOutAt: runsOutAt,
                             resetsAt: resetsAt)
    }
}
