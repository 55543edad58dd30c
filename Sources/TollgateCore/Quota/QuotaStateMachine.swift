import Foundation

/// Every quota decision, free of any I/O: given the rows a store read under its lock, the machine
/// says what happens and what to write. Both stores (SQLite and PostgreSQL) only read, ask and apply,
/// as they do with ``CircuitStateMachine``; the PL/pgSQL fast path is held to it by a differential test.
///
/// A reservation is decided in three steps, each with what the store read for it:
///
/// ```
///  stored row? ──synchronize──▶ row up to date (+ writes: create, limit, window)
///        row ──row.period(in:at:)──▶ window in force ──store reads its usage──▶ used
///  row, window, used ──decide──▶ admit(usedAfter, warnings) │ refuse(reason) │ wait(until)
///                                 + bookkeeping (always) + charges (when the whole call admits)
/// ```
///
/// Announcements, the server's exhausted mark and refunds are decided here too, so a new quota rule
/// has one place to go.
public enum QuotaStateMachine {
    // MARK: The bucket's row

    /// The bucket's row brought up to date with the configuration: created when there is none, a
    /// configuration-owned limit changed, a new window adopted (its announced reset and pacing
    /// dropped). Each change is recorded as a `limit` event.
    /// - Parameters:
    ///   - stored: The row as read, or nil when the bucket has none.
    ///   - configuredLimit: The configured limit (already validated).
    ///   - window: The configured window; nil keeps the stored one (the Pacific day for a new row).
    ///   - now: The time of the operation.
    /// - Returns: The row the rest of the operation decides from, and the writes that make it so.
    public static func synchronize(
        _ stored: QuotaBucketRow?, configuredLimit: Int, window: QuotaWindow?, now: Date
    ) -> (row: QuotaBucketRow, writes: [QuotaWrite]) {
        guard var row = stored else {
            let window = window ?? .pacificDay
            let row = QuotaBucketRow(storedLimit: configuredLimit, limitSource: .configuration,
                                     configuredLimit: configuredLimit, windowSpecification: window.specification)
            return (row, [
                .createBucket(limit: configuredLimit, windowSpecification: window.specification),
                .event(kind: .limit, key: window.naturalPeriod(containing: now).key,
                       detail: QuotaRules.newBucketDetail(limit: configuredLimit, window: window)),
            ])
        }
        var writes: [QuotaWrite] = []
        // Only a change writes an event, and only then is its key worked out.
        var key: String { (window ?? row.storedWindow).naturalPeriod(containing: now).key }
        switch row.limitSource {
        case .configuration where row.storedLimit != configuredLimit:
            writes.append(.storeLimit(configuredLimit))
            writes.append(.event(kind: .limit, key: key,
                                 detail: "daily limit \(row.storedLimit) → \(configuredLimit) (configuration)"))
            row.storedLimit = configuredLimit
            row.limit = configuredLimit
        case .configuration:
            row.limit = configuredLimit
        case .admin:
            row.limit = row.storedLimit
        }
        if let window, window.specification != row.windowSpecification {
            // A new window: what the old one counted stays under its keys, and the announced reset
            // and pacing of the old window no longer apply.
            writes.append(.changeWindow(specification: window.specification))
            writes.append(.event(kind: .limit, key: key,
                                 detail: QuotaRules.windowChangeDetail(from: row.windowSpecification, to: window)))
            row.windowSpecification = window.specification
            row.announcedKey = nil
            row.announcedResetMs = nil
            row.pacedAtMs = nil
            row.pacedKey = nil
        }
        return (row, writes)
    }

    /// The write that keeps the window the bucket charges in on its row: only when it changed
    /// (once a day for a daily bucket), not on every charge.
    /// - Parameters:
    ///   - row: The bucket's row.
    ///   - period: The window in force.
    /// - Returns: The write, or nil when the row already shows it.
    public static func noteWindow(_ row: QuotaBucketRow, period: QuotaPeriod) -> QuotaWrite? {
        let endMs = period.end.millisecondsSince1970
        guard row.windowKey != period.key || row.windowFirstKey != period.firstKey || row.windowEndMs != endMs
        else { return nil }
        return .noteWindow(period)
    }

    // MARK: Admission

    /// What one bucket of a reservation is asked to pay, and what the store read under its lock.
    public struct Admission: Sendable, Hashable {
        /// The endpoint charged.
        public var endpoint: String
        /// The units asked for (already validated).
        public var cost: Int
        /// The bucket's row, brought up to date by ``QuotaStateMachine/synchronize(_:configuredLimit:window:now:)``.
        public var row: QuotaBucketRow
        /// The window in force (``QuotaBucketRow/period(in:at:)``).
        public var period: QuotaPeriod
        /// The units the window used so far, read under the lock.
        public var used: Int
        /// The time of the reservation.
        public var now: Date
        /// How the bucket paces its last units, if it does (the primary bucket only).
        public var pacing: QuotaPacing?
        /// The warning levels to report (the primary bucket only).
        public var warningPercents: [Int]
        /// The highest level already reported in the window.
        public var alreadyWarned: Int

        /// Creates an admission.
        /// - Parameters:
        ///   - endpoint: The endpoint charged.
        ///   - cost: The units asked for.
        ///   - row: The bucket's row, up to date.
        ///   - period: The window in force.
        ///   - used: The window's units so far.
        ///   - now: The time of the reservation.
        ///   - pacing: The bucket's pacing, if any.
        ///   - warningPercents: The warning levels to report.
        ///   - alreadyWarned: The highest level already reported in the window.
        public init(
            endpoint: String, cost: Int, row: QuotaBucketRow, period: QuotaPeriod, used: Int, now: Date,
            pacing: QuotaPacing? = nil, warningPercents: [Int] = [], alreadyWarned: Int = 0
        ) {
            self.endpoint = endpoint
            self.cost = cost
            self.row = row
            self.period = period
            self.used = used
            self.now = now
            self.pacing = pacing
            self.warningPercents = warningPercents
            self.alreadyWarned = alreadyWarned
        }
    }

    /// Decides one bucket of a reservation: closed by the server's mark, over its limit, waiting
    /// for its paced slot, or admitted with the warnings the charge crosses. A call that costs
    /// nothing is admitted whatever the bucket says (its call counted, no units): it spends
    /// nothing, and an API that does not count it answers it while the bucket is spent — GitHub's
    /// `/rate_limit`, which a client reads to learn when it may go on.
    /// - Parameter admission: What is asked and what was read.
    /// - Returns: The verdict and the writes.
    public static func decide(_ admission: Admission) -> QuotaDecision {
        let row = admission.row, period = admission.period, used = admission.used
        let bookkeeping = noteWindow(row, period: period).map { [$0] } ?? []
        func decision(_ verdict: QuotaVerdict, charges: [QuotaWrite] = []) -> QuotaDecision {
            QuotaDecision(verdict: verdict, period: period, used: used, limit: row.limit, bookkeeping: bookkeeping,
                          charges: charges)
        }
        if admission.cost == 0 {
            return decision(.admit(usedAfter: used, warningsCrossed: []),
                            charges: [.charge(key: period.key, endpoint: admission.endpoint, units: 0)])
        }
        if row.isExhausted(in: period, nowMs: admission.now.millisecondsSince1970) {
            return decision(.refuse(.exhaustedByServer))
        }
        // `used` is a sum read from storage: checked arithmetic, so no value in it can trap.
        let (usedAfter, overflow) = used.addingReportingOverflow(admission.cost)
        guard !overflow, usedAfter <= row.limit else { return decision(.refuse(.overBudget)) }
        var charges: [QuotaWrite] = [.charge(key: period.key, endpoint: admission.endpoint, units: admission.cost)]
        if let pacing = admission.pacing {
            let lastPaced = row.pacedKey == period.key ? row.pacedAtMs.map { Date(millisecondsSince1970: $0) } : nil
            switch pacing.decide(cost: admission.cost, used: used, limit: row.limit, period: period,
                                 now: admission.now, lastPacedCharge: lastPaced) {
            case .wait(let until):
                return decision(.wait(until: until))
            case .allowed(paced: true):
                charges.append(.markPaced(atMs: admission.now.millisecondsSince1970, key: period.key))
            case .allowed(paced: false):
                break
            }
        }
        let crossed = QuotaRules.warningsCrossed(
            percents: admission.warningPercents, usedAfter: usedAfter, limit: row.limit,
            alreadyWarned: admission.alreadyWarned
        )
        if let highest = crossed.last {
            charges.append(.recordWarning(key: period.key, percent: highest))
        }
        return decision(.admit(usedAfter: usedAfter, warningsCrossed: crossed), charges: charges)
    }

    // MARK: What the server says

    /// The window an announcement applies to: a reset still ahead, more than a second from the
    /// window's end and no further than one more window, moves that end.
    /// - Parameters:
    ///   - row: The bucket's row, up to date.
    ///   - window: The bucket's window.
    ///   - resetsAt: The reset the server announced, if it said one.
    ///   - now: The time of the answer.
    /// - Returns: The window, whether the reset moved it, and the writes (the reset stored, the
    ///   window noted).
    public static func announcedPeriod(
        _ row: QuotaBucketRow, window: QuotaWindow, resetsAt: Date?, now: Date
    ) -> (period: QuotaPeriod, movedReset: Bool, writes: [QuotaWrite]) {
        var period = row.period(in: window, at: now)
        var writes: [QuotaWrite] = []
        var movedReset = false
        if let reset = resetsAt, QuotaRules.announcedResetMovesEnd(reset, of: period, now: now) {
            period = QuotaPeriod(key: period.key, start: period.start, end: reset)
            movedReset = true
            writes.append(.announceReset(key: period.key, resetMs: reset.millisecondsSince1970))
        }
        if let note = noteWindow(row, period: period) { writes.append(note) }
        return (period, movedReset, writes)
    }

    /// The ledger follows a server that says fewer units are left than it counts, never up.
    /// - Parameters:
    ///   - remaining: What the server says is left (validated: not negative).
    ///   - endpoint: The endpoint whose answer said it.
    ///   - limit: The limit in force.
    ///   - period: The window (``announcedPeriod(_:window:resetsAt:now:)``).
    ///   - used: The window's units, read under the lock.
    /// - Returns: The units followed (zero for none) and the write that records them.
    public static func follow(
        remaining: Int, endpoint: String, limit: Int, period: QuotaPeriod, used: Int
    ) -> (units: Int, writes: [QuotaWrite]) {
        let followed = QuotaRules.unitsToFollow(announcedRemaining: remaining, limit: limit, used: used)
        guard followed > 0 else { return (0, []) }
        let detail = QuotaRules.announcedDetail(remaining: remaining, endpoint: endpoint,
                                                counted: QuotaLimits.remaining(limit: limit, used: used))
        return (followed, [.followAnnouncement(key: period.key, units: followed, detail: detail)])
    }

    /// Closes a bucket until the end of its window, unless the server's mark already does.
    /// - Parameters:
    ///   - row: The bucket's row, up to date.
    ///   - bucket: The bucket.
    ///   - endpoint: The endpoint whose answer said so; `*` when none.
    ///   - now: The time of the answer.
    /// - Returns: The mark, and the write that sets it (none when it was set already).
    public static func markExhausted(
        _ row: QuotaBucketRow, bucket: String, endpoint: String?, now: Date
    ) -> (exhaustion: QuotaExhaustion, writes: [QuotaWrite]) {
        let window = row.storedWindow
        let period = row.period(in: window, at: now)
        if row.isExhausted(in: period, nowMs: now.millisecondsSince1970) {
            return (QuotaExhaustion(bucket: bucket, until: period.end, isNew: false), [])
        }
        return (QuotaExhaustion(bucket: bucket, until: period.end, isNew: true), [
            .markExhausted(key: period.key, untilMs: period.end.millisecondsSince1970,
                           endpoint: endpoint ?? QuotaRules.wholeBucket, detail: QuotaRules.exhaustedDetail(window: window, until: period.end)),
        ])
    }

    // MARK: Refunds

    /// The units a refund gives back: the charge's actual cost, but never below zero for the
    /// endpoint's total or the bucket's (a reset or a reconciliation may have given them back).
    /// - Parameters:
    ///   - cost: The charge's estimate plus what its settlement added.
    ///   - endpointUnits: The endpoint's total under the charge's key.
    ///   - bucketUnits: The bucket's total under the charge's key.
    /// - Returns: The units of the `refund` event (positive; the event records their negation).
    public static func refundUnits(cost: Int, endpointUnits: Int, bucketUnits: Int) -> Int {
        max(min(cost, endpointUnits, bucketUnits), 0)
    }
}
