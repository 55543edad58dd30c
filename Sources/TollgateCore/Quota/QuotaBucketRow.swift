import Foundation

/// A bucket's stored row (`quota_buckets`) as both stores read it, with the limit rule applied: the
/// one row type the quota machine (``QuotaStateMachine``) decides from.
public struct QuotaBucketRow: Sendable, Hashable {
    /// The limit in force: an operator's when one was set, otherwise the configured one.
    public var limit: Int
    /// The limit written in the row (differs from ``limit`` when the configuration changed).
    public var storedLimit: Int
    /// Who set the stored limit.
    public var limitSource: QuotaBucketStatus.LimitSource
    /// The end of the server's exhausted mark, in milliseconds since 1970.
    public var exhaustedUntilMs: Int64?
    /// The window key the highest warning level below was reported in (SQLite keeps it on the row;
    /// PostgreSQL keeps warnings on the key's day row and leaves this nil).
    public var warnedKey: String?
    /// The highest warning level reported in ``warnedKey``'s window.
    public var warnedPercent: Int
    /// The bucket's window as stored (`window_spec`).
    public var windowSpecification: String
    /// The window the ledger last charged in, as the `quota_windows` view shows it.
    public var windowKey: String?
    /// The oldest key of that window.
    public var windowFirstKey: String?
    /// The end of that window, in milliseconds since 1970.
    public var windowEndMs: Int64?
    /// The key of the window the server's last reset was announced in.
    public var announcedKey: String?
    /// The last reset the server announced, in milliseconds since 1970.
    public var announcedResetMs: Int64?
    /// When a paced bucket last charged, in milliseconds since 1970.
    public var pacedAtMs: Int64?
    /// The window key of that paced charge.
    public var pacedKey: String?

    /// Creates a row from its stored columns, applying the limit rule.
    /// - Parameters:
    ///   - storedLimit: The `daily_limit` column, already clamped to the allowed range.
    ///   - limitSource: The `limit_source` column.
    ///   - configuredLimit: The caller's configured limit, in force unless an operator set one.
    ///   - exhaustedUntilMs: The server's mark.
    ///   - warnedKey: The window of the last warning reported, where the row keeps it.
    ///   - warnedPercent: The highest level reported in it.
    ///   - windowSpecification: The stored window.
    ///   - windowKey: The key last noted.
    ///   - windowFirstKey: The first key last noted.
    ///   - windowEndMs: The end last noted.
    ///   - announcedKey: The window of the last announced reset.
    ///   - announcedResetMs: The last announced reset.
    ///   - pacedAtMs: The last paced charge.
    ///   - pacedKey: Its window.
    public init(
        storedLimit: Int, limitSource: QuotaBucketStatus.LimitSource, configuredLimit: Int,
        exhaustedUntilMs: Int64? = nil, warnedKey: String? = nil, warnedPercent: Int = 0,
        windowSpecification: String = QuotaWindow.pacificDay.specification, windowKey: String? = nil,
        windowFirstKey: String? = nil, windowEndMs: Int64? = nil, announcedKey: String? = nil,
        announcedResetMs: Int64? = nil, pacedAtMs: Int64? = nil, pacedKey: String? = nil
    ) {
        self.limit = limitSource == .admin ? storedLimit : configuredLimit
        self.storedLimit = storedLimit
        self.limitSource = limitSource
        self.exhaustedUntilMs = exhaustedUntilMs
        self.warnedKey = warnedKey
        self.warnedPercent = warnedPercent
        self.windowSpecification = windowSpecification
        self.windowKey = windowKey
        self.windowFirstKey = windowFirstKey
        self.windowEndMs = windowEndMs
        self.announcedKey = announcedKey
        self.announcedResetMs = announcedResetMs
        self.pacedAtMs = pacedAtMs
        self.pacedKey = pacedKey
    }

    /// The window stored with the bucket; the Pacific day for a text no window reads as.
    public var storedWindow: QuotaWindow { QuotaWindow(specification: windowSpecification) ?? .pacificDay }

    /// The window in force at `now` in `window`, the server's announced reset applied.
    /// - Parameters:
    ///   - window: The bucket's window.
    ///   - now: The time of the operation.
    /// - Returns: The window charges are written in.
    public func period(in window: QuotaWindow, at now: Date) -> QuotaPeriod {
        QuotaRules.period(in: window, at: now, announcedKey: announcedKey, announcedResetMs: announcedResetMs)
    }

    /// Whether the server's mark closes the bucket in `period`: it holds for the window it was set
    /// in, and only that window.
    /// - Parameters:
    ///   - period: The window in force.
    ///   - nowMs: The time of the operation, in milliseconds since 1970.
    /// - Returns: True while the mark closes the bucket.
    public func isExhausted(in period: QuotaPeriod, nowMs: Int64) -> Bool {
        QuotaRules.isExhausted(untilMs: exhaustedUntilMs, in: period, nowMs: nowMs)
    }

    /// The highest warning level already reported in `period`, where the row keeps it.
    /// - Parameter period: The window in force.
    /// - Returns: The level, 0 for none.
    public func warnedPercent(in period: QuotaPeriod) -> Int {
        warnedKey == period.key ? warnedPercent : 0
    }
}
