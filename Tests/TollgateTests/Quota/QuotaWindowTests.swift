import Foundation
import Testing
import TollgateTestSupport
import Tollgate

@Suite("Quota windows: keys, announced resets and pacing (pure rules)")
struct QuotaWindowRuleTests {
    @Test("Each window's key is its start: the local date for calendar windows, the UTC instant otherwise")
    func keysAreStarts() throws {
        let now = utc("2026-11-27T10:42:17Z")
        #expect(QuotaWindow.pacificDay.naturalPeriod(containing: now).key == "2026-11-27")
        #expect(QuotaWindow.pacificDay.naturalPeriod(containing: now).end == utc("2026-11-28T08:00:00Z"))
        let hour = QuotaWindow.hour.naturalPeriod(containing: now)
        #expect(hour.key == "2026-11-27T10:00:00Z")
        #expect(hour.end == utc("2026-11-27T11:00:00Z"))
        #expect(QuotaWindow.minute.naturalPeriod(containing: now).key == "2026-11-27T10:42:00Z")
        // 10:42 UTC is 19:42 in Tokyo: still the 27th there; 15:42 UTC is the 28th.
        let tokyo = QuotaWindow.day(timeZone: "Asia/Tokyo")
        #expect(tokyo.naturalPeriod(containing: now).key == "2026-11-27")
        #expect(tokyo.naturalPeriod(containing: utc("2026-11-27T15:42:00Z")).key == "2026-11-28")
        #expect(tokyo.naturalPeriod(containing: now).end == utc("2026-11-27T15:00:00Z"))
        let month = QuotaWindow.month(timeZone: "UTC").naturalPeriod(containing: now)
        #expect(month.key == "2026-11-01")
        #expect(month.end == utc("2026-12-01T00:00:00Z"))
        // A rolling hour counts its 60 one-minute slices, from the one holding now − 1 h.
        let rolling = QuotaWindow.rolling(seconds: 3600).naturalPeriod(containing: now)
        #expect(rolling.key == "2026-11-27T10:42:00Z")
        #expect(rolling.firstKey == "2026-11-27T09:42:00Z")
        #expect(rolling.spansSeveralKeys)
    }

    @Test("Specifications round-trip; unknown zones, abbreviations and bad lengths are refused")
    func specifications() {
        for window in [QuotaWindow.pacificDay, .hour, .minute, .month(timeZone: "Europe/Paris"), .rolling(seconds: 90),
                       .day(timeZone: "Asia/Tokyo")] {
            #expect(QuotaWindow(specification: window.specification) == window)
        }
        #expect(QuotaWindow(specification: "day Mars/Olympus") == nil)
        #expect(QuotaWindow(specification: "day PST") == nil)
        #expect(QuotaWindow(specification: "rolling 0") == nil)
        #expect(QuotaWindow(specification: "week") == nil)
    }

    @Test("A Pacific day across the fall-back change lasts 25 hours, as the default window always did")
    func pacificDaylightChange() {
        let period = QuotaWindow.pacificDay.naturalPeriod(containing: utc("2026-11-01T12:00:00Z"))
        #expect(period.key == "2026-11-01")
        #expect(period.end.timeIntervalSince(period.start) == 25 * 3600)
    }

    @Test("An announced reset ends the window early, then a new window starts at the reset; a later one extends it")
    func announcedResets() {
        let hour = QuotaWindow.hour
        let announcedEarly = (key: "2026-11-27T10:00:00Z", at: utc("2026-11-27T10:30:00Z"))
        let before = QuotaPeriod.current(in: hour, at: utc("2026-11-27T10:20:00Z"), announcedReset: announcedEarly)
        #expect(before.key == "2026-11-27T10:00:00Z")
        #expect(before.end == utc("2026-11-27T10:30:00Z"))
        let after = QuotaPeriod.current(in: hour, at: utc("2026-11-27T10:31:00Z"), announcedReset: announcedEarly)
        #expect(after.key == "2026-11-27T10:30:00Z")
        #expect(after.end == utc("2026-11-27T11:00:00Z"))

        // GitHub's hour that began at 10:30 runs to 11:30: past 11:00 it is still the same window.
        let announcedLate = (key: "2026-11-27T10:30:00Z", at: utc("2026-11-27T11:30:00Z"))
        let extended = QuotaPeriod.current(in: hour, at: utc("2026-11-27T11:10:00Z"), announcedReset: announcedLate)
        #expect(extended.key == "2026-11-27T10:30:00Z")
        #expect(extended.end == utc("2026-11-27T11:30:00Z"))
        let next = QuotaPeriod.current(in: hour, at: utc("2026-11-27T11:31:00Z"), announcedReset: announcedLate)
        #expect(next.key == "2026-11-27T11:30:00Z")

        // A reset far ahead (a clock set back) is not followed.
        let far = (key: "2026-11-27T10:00:00Z", at: utc("2026-11-27T15:00:00Z"))
        #expect(QuotaPeriod.current(in: hour, at: utc("2026-11-27T10:10:00Z"), announcedReset: far).end
            == utc("2026-11-27T11:00:00Z"))
    }

    @Test("Pacing: nothing while an even share is left; then one slot every time-left ÷ spendable; the reserve is never spent")
    func pacing() {
        let pacing = QuotaPacing(reserveFraction: 0.1)
        let period = QuotaPeriod(key: "k", start: utc("2026-11-27T10:00:00Z"), end: utc("2026-11-27T11:00:00Z"))
        let halfway = utc("2026-11-27T10:30:00Z")
        // 1,000 used of 5,000 at half time: more than an even share left.
        #expect(pacing.decide(cost: 1, used: 1_000, limit: 5_000, period: period, now: halfway, lastPacedCharge: nil)
            == .allowed(paced: false))
        // 4,450 used: 550 left, 500 kept back, 50 spendable over 1,800 s: one every 36 s.
        #expect(pacing.decide(cost: 1, used: 4_450, limit: 5_000, period: period, now: halfway, lastPacedCharge: nil)
            == .allowed(paced: true))
        #expect(pacing.decide(cost: 1, used: 4_450, limit: 5_000, period: period, now: halfway,
                              lastPacedCharge: halfway.addingTimeInterval(-10))
            == .wait(until: halfway.addingTimeInterval(26)))
        // Only the reserve is left: wait for the reset.
        #expect(pacing.decide(cost: 1, used: 4_500, limit: 5_000, period: period, now: halfway, lastPacedCharge: nil)
            == .wait(until: period.end))
    }
}

/// A ledger over a fresh file whose buckets count other windows than the Pacific day.
private struct WindowFixture {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let clock: ManualClock
    let ledger: QuotaLedger

    init(_ configuration: QuotaConfiguration, now: Date) throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("windows.sqlite"))
        clock = ManualClock(now: now)
        ledger = try QuotaLedger(storage: store, configuration: configuration, clock: clock)
    }

    func scalar(_ sql: String) async throws -> String? {
        try await store.read { db in try db.fetchValue(sql: sql).string }
    }
}

private func hourly(limit: Int, pacing: QuotaPacing? = nil) -> QuotaConfiguration {
    var configuration = QuotaConfiguration(bucketLimits: ["core": limit], defaultBucket: "core")
    configuration.bucketWindows = ["core": .hour]
    if let pacing { configuration.bucketPacing = ["core": pacing] }
    return configuration
}

@Suite("Quota windows in the ledger, over a real SQLite file")
struct QuotaWindowLedgerTests {
    @Test("An hourly bucket refuses at its limit until the next hour, resetsAt the hour's end; quota_windows shows it")
    func hourlyBucket() async throws {
        let fixture = try WindowFixture(hourly(limit: 3), now: utc("2026-11-27T10:15:00Z"))
        for _ in 0..<3 { try await fixture.ledger.reserve(endpoint: "repos.get") }
        let refused = await #expect(throws: TollgateError.self) { try await fixture.ledger.reserve(endpoint: "repos.get") }
        guard case .quotaExceeded(_, _, let remaining, let resetsAt) = refused else {
            Issue.record("expected quotaExceeded, got \(String(describing: refused))")
            return
        }
        #expect(remaining == 0)
        #expect(resetsAt == utc("2026-11-27T11:00:00Z"))
        // The view reads the machine's clock, not the test's: only what the ledger wrote is checked
        // here (its usage in the current window is checked with real time in the CLI tests).
        #expect(try await fixture.scalar("SELECT window || ' ' || window_start || ' ' || resets_at_utc FROM quota_windows")
            == "hour 2026-11-27T10:00:00Z 2026-11-27T11:00:00Z")

        fixture.clock.set(to: utc("2026-11-27T11:00:01Z"))
        try await fixture.ledger.reserve(endpoint: "repos.get")
        let status = try await fixture.ledger.status(bucket: "core")
        #expect(status.unitsUsed == 1)
        #expect(status.period.key == "2026-11-27T11:00:00Z")
        // The Pacific-day view leaves an hourly bucket out; the ledger's totals equal its events.
        #expect(try await fixture.scalar("SELECT CAST(COUNT(*) AS TEXT) FROM quota_today") == "0")
        #expect(try await fixture.ledger.discrepancies().isEmpty)
    }

    @Test("The server announcing fewer left moves the ledger down with an 'announced' event, never up")
    func followsAnnouncementsDown() async throws {
        let fixture = try WindowFixture(hourly(limit: 100), now: utc("2026-11-27T10:15:00Z"))
        try await fixture.ledger.reserve(endpoint: "repos.get")
        let down = try await fixture.store.recordQuotaAnnouncement(QuotaAnnouncement(
            bucket: "core", endpoint: "repos.get", configuredLimit: 100, window: .hour, remaining: 40,
            resetsAt: nil, at: fixture.clock.now()))
        #expect(down.unitsFollowed == 59)
        #expect(down.remaining == 40)
        let up = try await fixture.store.recordQuotaAnnouncement(QuotaAnnouncement(
            bucket: "core", endpoint: "repos.get", configuredLimit: 100, window: .hour, remaining: 90,
            resetsAt: nil, at: fixture.clock.now()))
        #expect(up.unitsFollowed == 0)
        #expect(try await fixture.ledger.remaining(bucket: "core") == 40)
        #expect(try await fixture.scalar("SELECT kind || ' ' || endpoint || ' ' || units FROM quota_events WHERE kind = 'announced'")
            == "announced * 59")
        #expect(try await fixture.ledger.discrepancies().isEmpty)
    }

    @Test("An announced reset before :00 ends the window there; the next charge opens a window keyed by the reset")
    func announcedResetStartsNewWindow() async throws {
        let fixture = try WindowFixture(hourly(limit: 10), now: utc("2026-11-27T10:15:00Z"))
        try await fixture.ledger.reserve(endpoint: "repos.get")
        _ = try await fixture.store.recordQuotaAnnouncement(QuotaAnnouncement(
            bucket: "core", endpoint: "repos.get", configuredLimit: 10, window: .hour, remaining: 0,
            resetsAt: utc("2026-11-27T10:30:00Z"), at: fixture.clock.now()))
        await #expect(throws: TollgateError.self) { try await fixture.ledger.reserve(endpoint: "repos.get") }
        #expect(try await fixture.ledger.status(bucket: "core").resetsAt == utc("2026-11-27T10:30:00Z"))

        fixture.clock.set(to: utc("2026-11-27T10:30:01Z"))
        let reservation = try await fixture.ledger.reserve(endpoint: "repos.get")
        #expect(reservation.remaining == 9)
        #expect(try await fixture.ledger.status(bucket: "core").period.key == "2026-11-27T10:30:00Z")
    }

    @Test("A paced bucket refuses with a throttle wait, then admits at its slot")
    func pacedBucket() async throws {
        let fixture = try WindowFixture(hourly(limit: 100, pacing: QuotaPacing(reserveFraction: 0.1)),
                                        now: utc("2026-11-27T10:30:00Z"))
        // The server says 20 are left at half time: 10 kept back, 10 spendable over 1,800 s.
        _ = try await fixture.store.recordQuotaAnnouncement(QuotaAnnouncement(
            bucket: "core", endpoint: "repos.get", configuredLimit: 100, window: .hour, remaining: 20,
            resetsAt: nil, at: fixture.clock.now()))
        try await fixture.ledger.reserve(endpoint: "repos.get")
        let waited = await #expect(throws: TollgateError.self) { try await fixture.ledger.reserve(endpoint: "repos.get") }
        guard case .throttled(let retryAfter) = waited else {
            Issue.record("expected throttled, got \(String(describing: waited))")
            return
        }
        // After that charge 9 are spendable over the 1,800 s left: one every 200 s.
        #expect(retryAfter == 200)
        // The slot is worked out again at each attempt, from the time then left: 100 s on, 1,700 s
        // for 9 units is still one every 189 s.
        fixture.clock.advance(by: .seconds(100))
        await #expect(throws: TollgateError.self) { try await fixture.ledger.reserve(endpoint: "repos.get") }
        fixture.clock.advance(by: .seconds(100))
        try await fixture.ledger.reserve(endpoint: "repos.get")
        await #expect(throws: TollgateError.self) { try await fixture.ledger.reserve(endpoint: "repos.get") }
    }

    @Test("An estimate settled at the actual cost: the difference is an event, above the limit refuses until the next window")
    func settledCosts() async throws {
        var configuration = QuotaConfiguration(
            bucketLimits: ["requests": 10, "tokens": 1_000],
            endpointCosts: ["chat": .init(bucket: "requests", units: 1, additionalCharges: [.init(bucket: "tokens", units: 100)],
                                          actualCost: .init(bucket: "tokens", source: .jsonBody(path: ["usage", "total_tokens"])))],
            defaultBucket: "requests"
        )
        configuration.bucketWindows = ["requests": .minute, "tokens": .minute]
        let fixture = try WindowFixture(configuration, now: utc("2026-11-27T10:15:10Z"))
        let first = try await fixture.ledger.reserve(endpoint: "chat")
        let low = try await fixture.store.settleQuotaCost(reservationID: first.id, bucket: "tokens", actualUnits: 37,
                                                          at: fixture.clock.now(), detail: "body usage.total_tokens")
        #expect(low == .settled(difference: -63, actualUnits: 37, overLimit: false))
        #expect(try await fixture.store.settleQuotaCost(reservationID: first.id, bucket: "tokens", actualUnits: 50,
                                                         at: fixture.clock.now(), detail: nil) == .alreadySettled)
        let second = try await fixture.ledger.reserve(endpoint: "chat")
        let high = try await fixture.store.settleQuotaCost(reservationID: second.id, bucket: "tokens", actualUnits: 990,
                                                           at: fixture.clock.now(), detail: nil)
        #expect(high == .settled(difference: 890, actualUnits: 990, overLimit: true))
        #expect(try await fixture.ledger.status(bucket: "tokens").unitsUsed == 1_027)
        await #expect(throws: TollgateError.self) { try await fixture.ledger.reserve(endpoint: "chat") }
        // A refund after a settlement gives back the actual cost.
        _ = try await fixture.ledger.refund(second, reason: "test")
        #expect(try await fixture.ledger.status(bucket: "tokens").unitsUsed == 37)
        #expect(try await fixture.ledger.discrepancies().isEmpty)
        fixture.clock.set(to: utc("2026-11-27T10:16:00Z"))
        try await fixture.ledger.reserve(endpoint: "chat")
    }

    @Test("The actual cost is read only as a whole number at the path, or a header")
    func actualCostReading() throws {
        let rule = QuotaConfiguration.ActualCost(source: .jsonBody(path: ["usage", "total_tokens"]))
        #expect(rule.read(from: [:], body: Data(#"{"usage":{"total_tokens":42}}"#.utf8)) == 42)
        #expect(rule.read(from: [:], body: Data(#"{"usage":{"total_tokens":true}}"#.utf8)) == nil)
        #expect(rule.read(from: [:], body: Data(#"{"usage":{"total_tokens":4.5}}"#.utf8)) == nil)
        #expect(rule.read(from: [:], body: Data(#"{"usage":{"total_tokens":-3}}"#.utf8)) == nil)
        #expect(rule.read(from: [:], body: Data(#"{"usage":[1]}"#.utf8)) == nil)
        #expect(rule.read(from: [:], body: Data("not json".utf8)) == nil)
        let header = QuotaConfiguration.ActualCost(source: .header(.init("x-usage-tokens")!))
        #expect(header.read(from: [.init("x-usage-tokens")!: " 17 "], body: nil) == 17)
    }
}

@Suite("Quota configuration: windows, pacing, announced limits and actual costs are checked")
struct QuotaWindowConfigurationTests {
    @Test("a window, a pacing share or an actual cost that cannot hold is refused by name")
    func refusals() {
        func refusal(_ change: (inout QuotaConfiguration) -> Void) -> String? {
            var configuration = QuotaConfiguration(bucketLimits: ["b": 10, "c": 5], defaultBucket: "b")
            change(&configuration)
            do {
                try configuration.validate()
                return nil
            } catch {
                return error.description
            }
        }
        #expect(refusal { $0.bucketWindows = ["b": .day(timeZone: "Mars/Olympus")] }?.contains("Mars/Olympus") == true)
        #expect(refusal { $0.bucketWindows = ["x": .hour] }?.contains("bucket x has a window but no limit") == true)
        #expect(refusal { $0.bucketWindows = ["b": .rolling(seconds: 0)] }?.contains("rolling window of 0 s") == true)
        #expect(refusal { $0.bucketPacing = ["b": QuotaPacing(reserveFraction: 1.5)] }?.contains("keeps back 1.5") == true)
        #expect(refusal { $0.announcedLimits = ["x": .init(policy: "core")] }?.contains("bucket x follows announced limits") == true)
        #expect(refusal {
            $0.endpointCosts = ["e": .init(bucket: "b", units: 1, actualCost: .init(bucket: "c", source: .header(.init("x-cost")!)))]
        }?.contains("settles its actual cost in bucket c, which it is not charged in") == true)
        #expect(refusal { $0.bucketWindows = ["b": .hour, "c": .month(timeZone: "Europe/Paris")] } == nil)
    }
}
