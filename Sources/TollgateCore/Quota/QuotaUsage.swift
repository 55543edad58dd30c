/// One endpoint's usage of one bucket on one Pacific day: a row of `quota_usage`.
public struct QuotaUsage: Sendable, Hashable {
    /// The Pacific day.
    public var day: PacificDay
    /// The bucket charged.
    public var bucket: String
    /// The endpoint.
    public var endpoint: String
    /// Units charged, net of refunds and resets: always the sum of the day's events for these keys.
    public var units: Int
    /// Reservations charged, refunded ones included (a refunded call still reached the server).
    public var calls: Int

    /// Creates a usage row.
    /// - Parameters:
    ///   - day: The Pacific day.
    ///   - bucket: The bucket.
    ///   - endpoint: The endpoint.
    ///   - units: Net units charged.
    ///   - calls: Reservations charged.
    public init(day: PacificDay, bucket: String, endpoint: String, units: Int, calls: Int) {
        self.day = day
        self.bucket = bucket
        self.endpoint = endpoint
        self.units = units
        self.calls = calls
    }
}
