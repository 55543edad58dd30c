import Foundation
import Testing
import TollgateCore
import TollgateSQLite

/// The quota rules on their own, without a database: each test gives the machine the rows a store
/// would have read and compares its verdict and writes, as values, with what the rule says.
@Suite("Quota state machine")
struct QuotaStateMachineTests {
    /// 2027-01-15T08:00:00Z: on the hour, midnight in Los Angeles (PST).
    let hourStart = Date(timeIntervalSince1970: 1_800_000_000)
    var halfPast: Date { hourStart.addingTimeInterval(1800) }

    func row(
        limit: Int = 100, source: QuotaBucketStatus.LimitSource = .configuration, configured: Int? = nil,
        window: QuotaWindow = .hour, exhaustedUntil: Date? = nil, pacedAt: Date? = nil, pacedKey: String? = nil
    ) -> QuotaBucketRow {
        QuotaBucketRow(
            storedLimit: limit, limitSource: source, configuredLimit: configured ?? limit,
            exhaustedUntilMs: exhaustedUntil?.millisecondsSince1970, windowSpecification: window.specification,
            pacedAtMs: pacedAt?.millisecondsSince1970, pacedKey: pacedKey
        )
    }

    func decide(
        _ row: QuotaBucketRow, cost: Int = 1, used: Int, at now: Date? = nil, window: QuotaWindow = .hour,
        pacing: QuotaPacing? = nil, warnings: [Int] = [], alreadyWarned: Int = 0
    ) -> QuotaDecision {
        let now = now ?? halfPast
        return QuotaStateMachine.decide(QuotaStateMachine.Admission(
            endpoint: "videos.list", cost: cost, row: row, period: row.period(in: window, at: now), used: used, now: now,
            pacing: pacing, warningPercents: warnings, alreadyWarned: alreadyWarned
        ))
    }

    // MARK: The row

    @Test("a bucket never seen is created from the configuration with one limit event in its natural window")
    func createsBucket() {
        let (row, writes) = QuotaStateMachine.synchronize(nil, configuredLimit: 500, window: .hour, now: halfPast)
        #expect(row.limit == 500 && row.storedLimit == 500 && row.limitSource == .configuration)
        #expect(row.windowSpecification == "hour")
        #expect(writes == [
            .createBucket(limit: 500, windowSpecification: "hour"),
            .event(kind: .limit, key: "2027-01-15T08:00:00Z", detail: "limit 500 per hour (configuration)"),
        ])
    }

    @Test("a new bucket without a window counts the Pacific day, keyed by its Pacific date")
    func createsPacificBucket() {
        let (row, writes) = QuotaStateMachine.synchronize(nil, configuredLimit: 10_000, window: nil, now: hourStart)
        #expect(row.storedWindow == .pacificDay)
        #expect(writes.last == .event(kind: .limit, key: "2027-01-15", detail: "daily limit 10000 (configuration)"))
    }

    @Test("a configuration-owned limit follows the configuration, with an event naming both limits")
    func configurationLimitChanges() {
        let stored = row(limit: 100, configured: 250)
        let (row, writes) = QuotaStateMachine.synchronize(stored, configuredLimit: 250, window: .hour, now: halfPast)
        #expect(row.limit == 250 && row.storedLimit == 250)
        #expect(writes == [
            .storeLimit(250),
            .event(kind: .limit, key: "2027-01-15T08:00:00Z", detail: "daily limit 100 → 250 (configuration)"),
        ])
    }

    @Test("an operator's limit wins over the configuration and writes nothing")
    func adminLimitWins() {
        let stored = row(limit: 40, source: .admin, configured: 250)
        let (row, writes) = QuotaStateMachine.synchronize(stored, configuredLimit: 250, window: .hour, now: halfPast)
        #expect(row.limit == 40)
        #expect(writes.isEmpty)
    }

    @Test("a new window drops the old window's announced reset and pacing, with an event")
    func windowChanges() {
        var stored = row(window: .pacificDay, pacedAt: hourStart, pacedKey: "2027-01-15")
        stored.announcedKey = "2027-01-15"
        stored.announcedResetMs = 1_800_003_600_000
        let (row, writes) = QuotaStateMachine.synchronize(stored, configuredLimit: 100, window: .minute, now: halfPast)
        #expect(row.announcedKey == nil && row.announcedResetMs == nil && row.pacedAtMs == nil && row.pacedKey == nil)
        #expect(writes == [
            .changeWindow(specification: "minute"),
            .event(kind: .limit, key: "2027-01-15T08:30:00Z",
                   detail: "window day America/Los_Angeles → minute (configuration)"),
        ])
    }

    @Test("no configured window keeps the stored one and writes nothing")
    func keepsStoredWindow() {
        let stored = row(window: .rolling(seconds: 3600))
        let (row, writes) = QuotaStateMachine.synchronize(stored, configuredLimit: 100, window: nil, now: halfPast)
        #expect(row == stored)
        #expect(writes.isEmpty)
    }

    // MARK: Admission

    @Test("under the limit: admitted with the units after the charge, one charge in the window's key")
    func admits() {
        let decision = decide(row(), cost: 3, used: 10)
        #expect(decision.verdict == .admit(usedAfter: 13, warningsCrossed: []))
        #expect(decision.charges == [.charge(key: "2027-01-15T08:00:00Z", endpoint: "videos.list", units: 3)])
        #expect(decision.used == 10 && decision.limit == 100)
    }

    @Test("a charge that reaches the limit exactly is admitted; one unit more is refused over budget")
    func limitIsInclusive() {
        #expect(decide(row(), cost: 5, used: 95).verdict == .admit(usedAfter: 100, warningsCrossed: []))
        let refused = decide(row(), cost: 6, used: 95)
        #expect(refused.verdict == .refuse(.overBudget))
        #expect(refused.charges.isEmpty)
    }

    @Test("a total near Int.max read from storage is refused, never trapped on")
    func overflowRefuses() {
        #expect(decide(row(limit: QuotaLimits.maximumUnits), cost: 1, used: .max).verdict == .refuse(.overBudget))
    }

    @Test("a free call in a bucket with a limit of zero is admitted")
    func freeCallInEmptyBucket() {
        #expect(decide(row(limit: 0), cost: 0, used: 0).verdict == .admit(usedAfter: 0, warningsCrossed: []))
    }

    @Test("a call that costs nothing goes through a bucket the server closed or an overdraft filled: its call is counted, no units, no pacing")
    func freeCallThroughAClosedBucket() {
        let closed = row(exhaustedUntil: hourStart.addingTimeInterval(3600))
        let free = decide(closed, cost: 0, used: 40)
        #expect(free.verdict == .admit(usedAfter: 40, warningsCrossed: []))
        #expect(free.charges.count == 1)
        #expect(decide(row(), cost: 0, used: 130).verdict == .admit(usedAfter: 130, warningsCrossed: []), "past its limit by an overdraft")
        #expect(decide(closed, cost: 1, used: 40).verdict == .refuse(.exhaustedByServer), "a unit is still refused")
    }

    @Test("the server's mark closes the bucket for the rest of its window, whatever the budget says")
    func exhaustedRefuses() {
        let closed = row(exhaustedUntil: hourStart.addingTimeInterval(3600))
        #expect(decide(closed, used: 0).verdict == .refuse(.exhaustedByServer))
    }

    @Test("a mark that ended, or one past this window's end (a clock set back), does not close the bucket")
    func staleMarkIgnored() {
        let ended = row(exhaustedUntil: hourStart.addingTimeInterval(60))
        #expect(decide(ended, used: 0).verdict == .admit(usedAfter: 1, warningsCrossed: []))
        let later = row(exhaustedUntil: hourStart.addingTimeInterval(7200))
        #expect(decide(later, used: 0).verdict == .admit(usedAfter: 1, warningsCrossed: []))
    }

    @Test("the window is noted on the row when it changed, and not again once the row shows it")
    func notesWindowOnce() {
        let first = decide(row(), used: 0)
        let period = QuotaWindow.hour.naturalPeriod(containing: halfPast)
        #expect(first.bookkeeping == [.noteWindow(period)])
        var noted = row()
        noted.windowKey = period.key
        noted.windowFirstKey = period.firstKey
        noted.windowEndMs = period.end.millisecondsSince1970
        #expect(decide(noted, used: 0).bookkeeping.isEmpty)
        #expect(decide(noted, cost: 500, used: 0).bookkeeping.isEmpty)
    }

    @Test("a refusal notes the window too: bookkeeping does not depend on the verdict")
    func refusalStillNotes() {
        let decision = decide(row(), cost: 101, used: 0)
        #expect(decision.verdict == .refuse(.overBudget))
        #expect(decision.bookkeeping.count == 1)
    }

    // MARK: Warnings

    @Test("a charge that crosses two levels at once reports both and records the higher")
    func warningsCrossed() {
        let decision = decide(row(), cost: 20, used: 78, warnings: [95, 80])
        #expect(decision.verdict == .admit(usedAfter: 98, warningsCrossed: [80, 95]))
        #expect(decision.charges.last == .recordWarning(key: "2027-01-15T08:00:00Z", percent: 95))
    }

    @Test("a level already reported in the window is not reported again")
    func warningsOnce() {
        let decision = decide(row(), cost: 20, used: 78, warnings: [80, 95], alreadyWarned: 80)
        #expect(decision.verdict == .admit(usedAfter: 98, warningsCrossed: [95]))
        let none = decide(row(), cost: 1, used: 97, warnings: [80, 95], alreadyWarned: 95)
        #expect(none.verdict == .admit(usedAfter: 98, warningsCrossed: []))
        #expect(!none.charges.contains(where: { if case .recordWarning = $0 { true } else { false } }))
    }

    @Test("a row keeps its warning only for the window it was reported in")
    func warnedPerWindow() {
        var warned = row()
        warned.warnedKey = "2027-01-15T07:00:00Z"
        warned.warnedPercent = 80
        let period = warned.period(in: .hour, at: halfPast)
        #expect(warned.warnedPercent(in: period) == 0)
        warned.warnedKey = period.key
        #expect(warned.warnedPercent(in: period) == 80)
    }

    // MARK: Pacing

    @Test("plenty left: pacing lets the charge go unpaced and keeps no slot")
    func pacingNotNeeded() {
        let decision = decide(row(), used: 10, pacing: QuotaPacing())
        #expect(decision.verdict == .admit(usedAfter: 11, warningsCrossed: []))
        #expect(decision.charges.count == 1)
    }

    @Test("little left: the first paced charge goes and keeps its time as the slot")
    func pacingStarts() {
        let decision = decide(row(), used: 80, pacing: QuotaPacing())
        #expect(decision.verdict == .admit(usedAfter: 81, warningsCrossed: []))
        #expect(decision.charges.last == .markPaced(atMs: halfPast.millisecondsSince1970, key: "2027-01-15T08:00:00Z"))
    }

    @Test("a paced charge waits for its slot: 10 spendable units over 30 minutes is one every 180 s")
    func pacingWaits() {
        // Limit 100, 10 % kept back, 80 used: 10 spendable; 1800 s left ÷ 10 = 180 s per unit.
        let paced = row(pacedAt: halfPast.addingTimeInterval(-60), pacedKey: "2027-01-15T08:00:00Z")
        let decision = decide(paced, used: 80, pacing: QuotaPacing())
        #expect(decision.verdict == .wait(until: halfPast.addingTimeInterval(120)))
        #expect(decision.charges.isEmpty)
        let outcome = decision.outcome(bucket: "b", endpoint: "videos.list", cost: 1, day: PacificDay(containing: halfPast))
        guard case .refused(let refusal) = outcome else {
            Issue.record("a wait must be reported as a refusal, got \(outcome)")
            return
        }
        #expect(refusal.reason == .paced && refusal.retryAt == halfPast.addingTimeInterval(120))
    }

    @Test("a paced slot from another window does not hold the charge back")
    func pacingSlotPerWindow() {
        let paced = row(pacedAt: halfPast.addingTimeInterval(-60), pacedKey: "2027-01-15T07:00:00Z")
        #expect(decide(paced, used: 80, pacing: QuotaPacing()).verdict == .admit(usedAfter: 81, warningsCrossed: []))
    }

    @Test("nothing spendable beyond the share kept back: wait for the window's end")
    func pacingReserveHolds() {
        let decision = decide(row(), cost: 1, used: 90, pacing: QuotaPacing())
        #expect(decision.verdict == .wait(until: hourStart.addingTimeInterval(3600)))
    }

    @Test("an over-budget charge is refused before pacing is asked")
    func budgetBeforePacing() {
        #expect(decide(row(), cost: 30, used: 80, pacing: QuotaPacing()).verdict == .refuse(.overBudget))
    }

    // MARK: Outcomes

    @Test("a refusal reports the units used, the limit and the window's end as the retry time")
    func refusalOutcome() {
        let decision = decide(row(), cost: 50, used: 60)
        let day = PacificDay(containing: halfPast)
        #expect(decision.outcome(bucket: "b", endpoint: "videos.list", cost: 50, day: day) == .refused(QuotaRefusal(
            reason: .overBudget, bucket: "b", endpoint: "videos.list", cost: 50, day: day, bucketUnitsUsed: 60,
            limit: 100, period: QuotaWindow.hour.naturalPeriod(containing: halfPast),
            retryAt: hourStart.addingTimeInterval(3600)
        )))
    }

    // MARK: Windows and the Pacific day

    @Test("the Pacific day of the spring change lasts 23 hours and the autumn one 25, each keyed by its date")
    func pacificDayAcrossChanges() {
        let spring = Date(timeIntervalSince1970: 1_772_956_800)   // 2026-03-08T08:00:00Z, midnight PST
        let springPeriod = row(window: .pacificDay).period(in: .pacificDay, at: spring.addingTimeInterval(23 * 3600 - 1))
        #expect(springPeriod.key == "2026-03-08" && springPeriod.length == 23 * 3600)
        #expect(row(window: .pacificDay).period(in: .pacificDay, at: spring.addingTimeInterval(23 * 3600)).key == "2026-03-09")
        let autumn = Date(timeIntervalSince1970: 1_793_516_400)   // 2026-11-01T07:00:00Z, midnight PDT
        let autumnPeriod = row(window: .pacificDay).period(in: .pacificDay, at: autumn.addingTimeInterval(24 * 3600))
        #expect(autumnPeriod.key == "2026-11-01" && autumnPeriod.length == 25 * 3600)
    }

    @Test("a charge in the 25th hour of the autumn day counts in that day against its limit")
    func chargeInLongDay() {
        let lastHour = Date(timeIntervalSince1970: 1_793_516_400 + 24 * 3600 + 1800)
        let decision = decide(row(limit: 10, window: .pacificDay), cost: 1, used: 10, at: lastHour, window: .pacificDay)
        #expect(decision.verdict == .refuse(.overBudget))
        #expect(decision.period.key == "2026-11-01")
    }

    // MARK: What the server says

    @Test("an announced reset ahead moves the window's end and is stored; within a second it is not")
    func announcedReset() {
        let reset = hourStart.addingTimeInterval(3000)
        let moved = QuotaStateMachine.announcedPeriod(row(), window: .hour, resetsAt: reset, now: halfPast)
        #expect(moved.movedReset && moved.period.end == reset)
        #expect(moved.writes.first == .announceReset(key: "2027-01-15T08:00:00Z", resetMs: reset.millisecondsSince1970))
        let near = QuotaStateMachine.announcedPeriod(row(), window: .hour, resetsAt: hourStart.addingTimeInterval(3600.5),
                                                     now: halfPast)
        #expect(!near.movedReset && near.period.end == hourStart.addingTimeInterval(3600))
    }

    @Test("a rolling window has no end to move")
    func rollingIgnoresReset() {
        let rolling = QuotaWindow.rolling(seconds: 3600)
        let result = QuotaStateMachine.announcedPeriod(row(window: rolling), window: rolling,
                                                       resetsAt: halfPast.addingTimeInterval(600), now: halfPast)
        #expect(!result.movedReset)
        #expect(!result.writes.contains(where: { if case .announceReset = $0 { true } else { false } }))
    }

    @Test("the ledger follows the server down to what it says is left, never up")
    func followsDownOnly() {
        let period = QuotaWindow.hour.naturalPeriod(containing: halfPast)
        let down = QuotaStateMachine.follow(remaining: 30, endpoint: "videos.list", limit: 100, period: period, used: 50)
        #expect(down.units == 20)
        #expect(down.writes == [.followAnnouncement(
            key: period.key, units: 20, detail: "the server announced 30 left after videos.list; the ledger counted 50")])
        let up = QuotaStateMachine.follow(remaining: 70, endpoint: "videos.list", limit: 100, period: period, used: 50)
        #expect(up.units == 0 && up.writes.isEmpty)
    }

    @Test("the server's mark closes the bucket to its window's end once; a second mark changes nothing")
    func marksExhaustedOnce() {
        let end = hourStart.addingTimeInterval(3600)
        let first = QuotaStateMachine.markExhausted(row(), bucket: "b", endpoint: "videos.list", now: halfPast)
        #expect(first.exhaustion == QuotaExhaustion(bucket: "b", until: end, isNew: true))
        #expect(first.writes == [.markExhausted(key: "2027-01-15T08:00:00Z", untilMs: end.millisecondsSince1970,
                                                endpoint: "videos.list",
                                                detail: "the server said the quota is spent; closed until 2027-01-15T09:00:00Z")])
        let second = QuotaStateMachine.markExhausted(row(exhaustedUntil: end), bucket: "b", endpoint: nil, now: halfPast)
        #expect(second.exhaustion.isNew == false && second.writes.isEmpty)
    }

    // MARK: Refunds

    @Test("a refund gives back the actual cost, but never more than either total holds, and never below zero")
    func refundUnits() {
        #expect(QuotaStateMachine.refundUnits(cost: 7, endpointUnits: 20, bucketUnits: 30) == 7)
        #expect(QuotaStateMachine.refundUnits(cost: 7, endpointUnits: 3, bucketUnits: 30) == 3)
        #expect(QuotaStateMachine.refundUnits(cost: 7, endpointUnits: 20, bucketUnits: 2) == 2)
        #expect(QuotaStateMachine.refundUnits(cost: 7, endpointUnits: -4, bucketUnits: 30) == 0)
    }
}
