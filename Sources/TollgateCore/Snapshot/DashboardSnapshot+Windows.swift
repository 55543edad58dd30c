import Foundation

extension DashboardSnapshot.Bucket {
    /// The window a bucket is shown in, from its stored row: the Pacific day, or its own window
    /// (an hour, a minute…) with the server's announced reset applied. Both stores read the same
    /// columns and call this, so their snapshots agree.
    /// - Parameters:
    ///   - windowSpecification: The row's `window_spec`.
    ///   - announcedKey: The row's `announced_key`.
    ///   - announcedResetMs: The row's `announced_reset_ms`.
    ///   - now: The snapshot's time.
    /// - Returns: The window, and the period in force.
    public static func shownWindow(
        windowSpecification: String, announcedKey: String?, announcedResetMs: Int64?, now: Date
    ) -> (window: QuotaWindow, period: QuotaPeriod) {
        let window = QuotaWindow(specification: windowSpecification) ?? .pacificDay
        return (window, QuotaRules.period(in: window, at: now, announcedKey: announcedKey,
                                          announcedResetMs: announcedResetMs))
    }

    /// A bucket as the dashboard shows it, its usage read in the window in force.
    /// - Parameters:
    ///   - bucket: The bucket's name.
    ///   - limit: Its limit.
    ///   - exhaustedUntilMs: The row's exhausted mark, if any.
    ///   - window: Its window.
    ///   - period: The window in force.
    ///   - nowMs: The snapshot's time, in milliseconds since 1970.
    ///   - endpoints: Usage per endpoint in that window, largest first.
    public init(
        bucket: String, limit: Int, exhaustedUntilMs: Int64?, window: QuotaWindow, period: QuotaPeriod, nowMs: Int64,
        endpoints: [DashboardSnapshot.EndpointUsage]
    ) {
        let used = endpoints.reduce(0) { QuotaLimits.saturatingSum($0, $1.units) }
        let exhausted = QuotaRules.isExhausted(untilMs: exhaustedUntilMs, in: period, nowMs: nowMs)
        let isDaily = window.isPacificDay && !period.spansSeveralKeys
        self.init(
            bucket: bucket, limit: limit, used: used,
            remaining: exhausted ? 0 : QuotaLimits.remaining(limit: limit, used: used),
            exhaustedUntil: exhausted ? exhaustedUntilMs.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) } : nil,
            endpoints: endpoints,
            window: isDaily ? nil : window.specification, resetsAt: isDaily ? nil : period.end
        )
    }
}
