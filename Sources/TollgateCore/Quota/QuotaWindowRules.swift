import Foundation

/// The rules and messages of windows, announcements and settlements that both stores apply around
/// their own SQL: one copy, so SQLite and PostgreSQL decide them alike and word their events alike.
extension QuotaRules {
    /// The window in force at `now` for a bucket whose row stores the last reset the server
    /// announced (``QuotaPeriod/current(in:at:announcedReset:)``).
    /// - Parameters:
    ///   - window: The bucket's window.
    ///   - now: The time of the operation.
    ///   - announcedKey: The key of the window the reset was announced in, if one was.
    ///   - announcedResetMs: The announced reset, in milliseconds since 1970, if one was.
    /// - Returns: The window charges are written in.
    public static func period(
        in window: QuotaWindow, at now: Date, announcedKey: String?, announcedResetMs: Int64?
    ) -> QuotaPeriod {
        let announced = announcedKey.flatMap { key in
            announcedResetMs.map { (key: key, at: Date(millisecondsSince1970: $0)) }
        }
        return QuotaPeriod.current(in: window, at: now, announcedReset: announced)
    }

    /// Whether the server's exhausted mark closes a bucket in `period`.
    ///
    /// The mark holds for the window it was set in, and only that window: it ends at that window's
    /// end, and a wall clock set back to an earlier window does not extend it.
    /// - Parameters:
    ///   - untilMs: The mark's end, in milliseconds since 1970; nil when the bucket has none.
    ///   - period: The window in force.
    ///   - nowMs: The time of the operation, in milliseconds since 1970.
    /// - Returns: True while the mark closes the bucket.
    public static func isExhausted(untilMs: Int64?, in period: QuotaPeriod, nowMs: Int64) -> Bool {
        guard let until = untilMs else { return false }
        return until > nowMs && until <= milliseconds(period.end)
    }

    /// Whether a reset the server announced moves the end of `period`: it is still ahead, more
    /// than a second from the end the ledger has, no further than one more window past that end,
    /// and the window has an end to move (a rolling window has none).
    ///
    /// A reset further ahead (`X-RateLimit-Reset: 9999999999999999`) is no reading of this window:
    /// it is ignored, so it is neither stored, shown nor relayed.
    /// - Parameters:
    ///   - reset: The announced reset, if the server said one.
    ///   - period: The window in force.
    ///   - now: The time of the answer.
    /// - Returns: True when the window's end becomes `reset`.
    public static func announcedResetMovesEnd(_ reset: Date?, of period: QuotaPeriod, now: Date) -> Bool {
        guard let reset, reset > now, !period.spansSeveralKeys,
              reset <= period.end.addingTimeInterval(max(period.length, 0)) else { return false }
        return abs(reset.timeIntervalSince(period.end)) >= 1
    }

    /// The units the ledger adds to follow a server that says fewer are left than it counts; zero
    /// when the server leaves as many or more (the ledger never follows it up).
    /// - Parameters:
    ///   - announcedRemaining: What the server says is left.
    ///   - limit: The bucket's limit in force.
    ///   - used: The units the window used so far.
    /// - Returns: The units of the `announced` event, zero for none.
    public static func unitsToFollow(announcedRemaining: Int, limit: Int, used: Int) -> Int {
        let counted = QuotaLimits.remaining(limit: limit, used: used)
        return announcedRemaining < counted ? counted - announcedRemaining : 0
    }

    /// The window a settlement reports as past its limit or not (``QuotaCostSettlement/settled(difference:actualUnits:overLimit:)``):
    /// for a rolling window, the window as it stands at the settlement, which counts the charge's
    /// slice with every other slice still in it; otherwise the window the charge was made in, even
    /// when the answer came after it ended.
    /// - Parameters:
    ///   - chargeKey: The key the charge was written under.
    ///   - current: The bucket's window at the settlement, when the bucket has a row.
    /// - Returns: The window whose usage to compare with the limit.
    public static func settlementPeriod(chargeKey: String, current: QuotaPeriod?) -> QuotaPeriod {
        if let current, current.spansSeveralKeys { return current }
        return QuotaPeriod(key: chargeKey, start: .distantPast, end: .distantFuture)
    }

    /// Refuses a negative remaining count in an announcement.
    /// - Parameter announcement: What the server said.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` naming the bucket and the count.
    public static func validateAnnouncement(_ announcement: QuotaAnnouncement) throws(StoreRefusal) {
        guard announcement.remaining >= 0 else {
            throw .invalidArgument(
                "the server's remaining count for \(announcement.bucket) is negative (\(announcement.remaining))")
        }
    }

    /// Refuses an actual cost outside ``QuotaLimits/allowedUnits``.
    /// - Parameters:
    ///   - actualUnits: The actual cost.
    ///   - reservationID: The reservation settled, for the message.
    ///   - bucket: The bucket settled, for the message.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)``.
    public static func validateActualCost(_ actualUnits: Int, reservationID: Int64, bucket: String) throws(StoreRefusal) {
        try validateCost(actualUnits, endpoint: "the settlement of reservation \(reservationID)", bucket: bucket)
    }

    /// The refusal of a settlement whose reservation has no charge in the bucket named.
    /// - Parameters:
    ///   - reservationID: The reservation.
    ///   - bucket: The bucket.
    /// - Returns: The refusal, for the store to throw.
    public static func noCharge(reservationID: Int64, bucket: String) -> StoreRefusal {
        .invalidArgument("reservation \(reservationID) has no charge in bucket \(bucket)")
    }

    /// The refusal of a settlement that would take a stored total out of range (a total changed by
    /// hand, or given back by an operator's reset before the settlement came).
    /// - Parameters:
    ///   - difference: The settlement's difference.
    ///   - endpoint: The endpoint charged.
    ///   - bucket: The bucket.
    ///   - key: The window's key.
    /// - Returns: The refusal, for the store to throw.
    public static func settlementOutOfRange(difference: Int, endpoint: String, bucket: String, key: String) -> StoreRefusal {
        .invalidArgument("the stored usage of \(endpoint) in \(bucket) in \(key) cannot take a settlement of \(difference) units")
    }

    // MARK: Event details

    /// The detail of the `limit` event that creates a bucket's row from the configuration.
    public static func newBucketDetail(limit: Int, window: QuotaWindow) -> String {
        window.isPacificDay ? "daily limit \(limit) (configuration)" : "limit \(limit) per \(window) (configuration)"
    }

    /// The detail of the `limit` event of a configuration that changed the bucket's window.
    public static func windowChangeDetail(from stored: String, to window: QuotaWindow) -> String {
        "window \(stored) → \(window.specification) (configuration)"
    }

    /// The detail of the `exhausted` event: until when the bucket is closed, in Pacific time for
    /// the Pacific day, as a UTC instant otherwise.
    public static func exhaustedDetail(window: QuotaWindow, until: Date) -> String {
        window.isPacificDay
            ? "the server said the daily quota is spent; closed until \(PacificDay.localTimeDescription(of: until))"
            : "the server said the quota is spent; closed until \(QuotaWindow.instantKey(until))"
    }

    /// The detail of an `announced` event.
    public static func announcedDetail(remaining: Int, endpoint: String, counted: Int) -> String {
        "the server announced \(remaining) left after \(endpoint); the ledger counted \(counted)"
    }

    /// The detail of a `settle` event.
    public static func settledDetail(actualUnits: Int, estimate: Int, source: String?) -> String {
        "actual cost \(actualUnits) for an estimate of \(estimate)" + (source.map { " (\($0))" } ?? "")
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        date.millisecondsSince1970
    }
}
