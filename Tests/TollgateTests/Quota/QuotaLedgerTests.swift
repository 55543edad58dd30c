import Foundation
import Testing
import TollgateTestSupport
import Tollgate

/// A ledger over a fresh file with its own clock and captured log. The ledger's mechanics are
/// tested on the seed's single-pool YouTube model, where `search.list` is the expensive method.
private struct Fixture {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let clock: ManualClock
    let log = LogCapture()
    let ledger: QuotaLedger

    init(configuration: QuotaConfiguration = .youTubeDataAPIv3SinglePool, now: Date = utc("2026-11-21T18:00:00Z")) throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("quota.sqlite"))
        clock = ManualClock(now: now)
        ledger = try QuotaLedger(storage: store, configuration: configuration, clock: clock, logger: log.logger)
    }

    /// A second ledger on the same file through a store of its own, as another process would open it.
    func reopened(configuration: QuotaConfiguration? = nil, clock: ManualClock? = nil) throws -> QuotaLedger {
        try QuotaLedger(
            storage: try SQLiteStore(path: directory.path("quota.sqlite")),
            configuration: configuration ?? ledger.configuration, clock: clock ?? self.clock, logger: log.logger
        )
    }

    func eventCount() async throws -> Int {
        try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM quota_events").int ?? -1 }
    }
}

/// One bucket `b` of `limit` units and an endpoint `e.list` costing `cost`.
private func smallConfiguration(limit: Int, cost: Int = 1, notModifiedCost: NotModifiedCost = .free) -> QuotaConfiguration {
    QuotaConfiguration(
        bucketLimits: ["b": limit],
        endpointCosts: ["e.list": .init(bucket: "b", units: cost, notModifiedCost: notModifiedCost)],
        defaultBucket: "b"
    )
}

@Suite("Quota ledger")
struct QuotaLedgerTests {
    @Test("9,950 units used: search.list (100) is refused with 50 remaining and the next Pacific midnight, and nothing is charged")
    func refusesWhatTheBudgetCannotPay() async throws {
        let fixture = try Fixture()
        for _ in 0..<99 { try await fixture.ledger.reserve(endpoint: "search.list") }
        for _ in 0..<50 { try await fixture.ledger.reserve(endpoint: "videos.list") }
        #expect(try await fixture.ledger.remaining() == 50)
        let events = try await fixture.eventCount()

        let error = await #expect(throws: TollgateError.self) {
            try await fixture.ledger.reserve(endpoint: "search.list")
        }
        // 10:00 PST on 2026-11-21; the quota resets at 00:00 PST on 2026-11-22 = 08:00 UTC.
        #expect(error == .quotaExceeded(endpoint: "search.list", cost: 100, remaining: 50, resetsAt: utc("2026-11-22T08:00:00Z")))
        #expect(error?.description == "Daily API quota exceeded: search.list costs 100 units and 50 units remain today. "
            + "The quota resets at 2026-11-22 00:00 PST.")
        #expect(try await fixture.eventCount() == events)
        #expect(try await fixture.ledger.remaining() == 50)
        #expect(fixture.log.messages(at: .debug).contains(error?.description ?? "?"))

        // The 50 units left still pay for 50 one-unit calls, and not one more.
        for _ in 0..<50 { try await fixture.ledger.reserve(endpoint: "videos.list") }
        await #expect(throws: TollgateError.quotaExceeded(
            endpoint: "videos.list", cost: 1, remaining: 0, resetsAt: utc("2026-11-22T08:00:00Z")
        )) {
            try await fixture.ledger.reserve(endpoint: "videos.list")
        }
        let usage = try await fixture.ledger.usage()
        #expect(usage == [
            QuotaUsage(day: PacificDay(key: "2026-11-21")!, bucket: "youtube", endpoint: "search.list", units: 9900, calls: 99),
            QuotaUsage(day: PacificDay(key: "2026-11-21")!, bucket: "youtube", endpoint: "videos.list", units: 100, calls: 100),
        ])
    }

    @Test("usage at 23:59 and at 00:00 Pacific lands on different days, across both DST changes, and the budget resets at midnight",
          arguments: [
              // The 25-hour day: 2026-11-01, clocks fall back at 02:00 PDT.
              (before: "2026-11-02T07:59:00Z", after: "2026-11-02T08:00:00Z", day: "2026-11-01", next: "2026-11-02"),
              // The 23-hour day: 2026-03-08, clocks spring forward at 02:00 PST.
              (before: "2026-03-09T06:59:00Z", after: "2026-03-09T07:00:00Z", day: "2026-03-08", next: "2026-03-09"),
              // The day before each change ends in the other offset.
              (before: "2026-11-01T06:59:00Z", after: "2026-11-01T07:00:00Z", day: "2026-10-31", next: "2026-11-01"),
              (before: "2026-03-08T07:59:00Z", after: "2026-03-08T08:00:00Z", day: "2026-03-07", next: "2026-03-08"),
          ])
    func pacificMidnight(before: String, after: String, day: String, next: String) async throws {
        let fixture = try Fixture(configuration: smallConfiguration(limit: 1), now: utc(before))
        let first = try await fixture.ledger.reserve(endpoint: "e.list")
        #expect(first.day.key == day)
        #expect(first.resetsAt == utc(after))
        // 23:59: the day's single unit is spent.
        await #expect(throws: TollgateError.self) { try await fixture.ledger.reserve(endpoint: "e.list") }

        fixture.clock.set(to: utc(after))
        let second = try await fixture.ledger.reserve(endpoint: "e.list")
        #expect(second.day.key == next)

        let dayUsage = try await fixture.ledger.usage(on: PacificDay(key: day)!)
        let nextUsage = try await fixture.ledger.usage(on: PacificDay(key: next)!)
        #expect(dayUsage.map(\.units) == [1])
        #expect(nextUsage.map(\.units) == [1])
    }

    @Test("the days around the changes are 25 and 23 hours long: both 01:30s of 2026-11-01 are the same day")
    func dayLengths() async throws {
        let fixture = try Fixture(configuration: smallConfiguration(limit: 10), now: utc("2026-11-01T07:00:00Z"))
        let midnight = try await fixture.ledger.reserve(endpoint: "e.list")
        #expect(midnight.day.key == "2026-11-01")
        #expect(midnight.resetsAt.timeIntervalSince(utc("2026-11-01T07:00:00Z")) == 25 * 3600)
        for instant in ["2026-11-01T08:30:00Z", "2026-11-01T09:30:00Z"] { // 01:30 PDT, then 01:30 PST
            fixture.clock.set(to: utc(instant))
            #expect(try await fixture.ledger.reserve(endpoint: "e.list").day.key == "2026-11-01")
        }
        fixture.clock.set(to: utc("2026-03-08T08:00:00Z"))
        let spring = try await fixture.ledger.reserve(endpoint: "e.list")
        #expect(spring.day.key == "2026-03-08")
        #expect(spring.resetsAt.timeIntervalSince(utc("2026-03-08T08:00:00Z")) == 23 * 3600)
    }

    @Test("a 304 costs what the endpoint documents: 1 unit on YouTube, settled once; free refunded; full kept")
    func notModifiedCostsWhatTheAPIDocuments() async throws {
        var configuration = QuotaConfiguration.youTubeDataAPIv3SinglePool
        configuration.endpointCosts["charged.list"] = .init(bucket: "youtube", units: 5, notModifiedCost: .full)
        configuration.endpointCosts["free.list"] = .init(bucket: "youtube", units: 5, notModifiedCost: .free)
        let fixture = try Fixture(configuration: configuration)
        let search = try await fixture.ledger.reserve(endpoint: "search.list")
        #expect(try await fixture.ledger.remaining() == 9900)

        // Google: every request costs at least one point; a 304 of a 100-unit search costs 1.
        #expect(try await fixture.ledger.settle(search, responseStatus: 304) == .settled(units: 1))
        #expect(try await fixture.ledger.remaining() == 9999)
        #expect(try await fixture.ledger.settle(search, responseStatus: 304) == .alreadyRefunded)
        #expect(try await fixture.ledger.remaining() == 9999)

        let videos = try await fixture.ledger.reserve(endpoint: "videos.list")
        #expect(try await fixture.ledger.settle(videos, responseStatus: 200) == .kept)
        let videos304 = try await fixture.ledger.reserve(endpoint: "videos.list")
        #expect(try await fixture.ledger.settle(videos304, responseStatus: 304) == .kept, "a 1-unit call's 304 costs its 1 unit")
        let charged = try await fixture.ledger.reserve(endpoint: "charged.list")
        #expect(try await fixture.ledger.settle(charged, responseStatus: 304) == .kept)
        let free = try await fixture.ledger.reserve(endpoint: "free.list")
        #expect(try await fixture.ledger.settle(free, responseStatus: 304) == .refunded(units: 5))
        #expect(try await fixture.ledger.settle(free, responseStatus: 304) == .alreadyRefunded)
        #expect(try await fixture.reopened().refund(free, reason: "again") == .alreadyRefunded)
        #expect(try await fixture.ledger.remaining() == 10_000 - 1 - 1 - 1 - 5)

        let search304 = try #require(try await fixture.ledger.usage().first { $0.endpoint == "search.list" })
        #expect(search304.units == 1)
        #expect(search304.calls == 1) // the 304 reached the server
        #expect(try await fixture.ledger.discrepancies().isEmpty)
        let events = try await fixture.store.read { db in
            try db.fetchAll(sql: "SELECT kind, units, reservation_id FROM quota_events WHERE endpoint = 'search.list' ORDER BY id")
        }
        #expect(events == [Row(["charge", 100, nil]), Row(["settle", -99, .integer(search.id)])])
        #expect(try await fixture.ledger.discrepancies().isEmpty)
    }

    @Test("a refund, or a 304's settlement, after midnight goes back to the day that was charged")
    func refundAfterMidnight() async throws {
        let fixture = try Fixture(now: utc("2026-11-22T07:59:00Z")) // 23:59 PST, 2026-11-21
        let refunded = try await fixture.ledger.reserve(endpoint: "search.list")
        let settled = try await fixture.ledger.reserve(endpoint: "search.list")
        fixture.clock.set(to: utc("2026-11-22T08:01:00Z"))
        #expect(try await fixture.ledger.refund(refunded, reason: "never sent") == .refunded(units: 100))
        #expect(try await fixture.ledger.settle(settled, responseStatus: 304) == .settled(units: 1))
        #expect(try await fixture.ledger.usage(on: PacificDay(key: "2026-11-21")!).map(\.units) == [1])
        #expect(try await fixture.ledger.usage().isEmpty)
        #expect(try await fixture.ledger.remaining() == 10_000)
    }

    @Test("the server's exhausted mark refuses reservations in a second store on the same file until the next Pacific midnight")
    func exhaustedMarkIsShared() async throws {
        let fixture = try Fixture()
        try await fixture.ledger.reserve(endpoint: "videos.list")
        let until = try await fixture.ledger.markExhausted(endpoint: "videos.list")
        #expect(until == utc("2026-11-22T08:00:00Z"))
        #expect(fixture.log.messages(at: .notice).contains { $0.contains("quota bucket youtube is spent; refusing its reservations until") })
        // A second mark the same day changes nothing and logs nothing.
        try await fixture.ledger.markExhausted(bucket: "youtube")
        #expect(fixture.log.messages(at: .notice).count == 1)

        let otherClock = ManualClock(now: utc("2026-11-21T20:00:00Z"))
        let other = try fixture.reopened(clock: otherClock)
        await #expect(throws: TollgateError.quotaExceeded(
            endpoint: "videos.list", cost: 1, remaining: 0, resetsAt: utc("2026-11-22T08:00:00Z")
        )) {
            try await other.reserve(endpoint: "videos.list")
        }
        let status = try await other.status()
        #expect(status.isExhausted)
        #expect(status.remaining == 0)
        #expect(status.unitsUsed == 1)

        otherClock.set(to: utc("2026-11-22T08:00:00Z"))
        let next = try await other.reserve(endpoint: "videos.list")
        #expect(next.day.key == "2026-11-22")
        #expect(next.remaining == 9999)
        let kinds = try await fixture.store.read { db in
            try db.fetchAll(sql: "SELECT kind FROM quota_events WHERE kind = 'exhausted'").count
        }
        #expect(kinds == 1)
    }

    @Test("warnings at 80 % and 95 % are logged once a day each, also by a restarted ledger, and again the next day")
    func warningsOncePerDay() async throws {
        let fixture = try Fixture(configuration: smallConfiguration(limit: 100))
        func warnings() -> [String] { fixture.log.messages(at: .warning) }
        for _ in 0..<79 { try await fixture.ledger.reserve(endpoint: "e.list") }
        #expect(warnings().isEmpty)
        let eightieth = try await fixture.ledger.reserve(endpoint: "e.list")
        #expect(warnings() == ["Quota bucket b passed 80% of its daily limit: 80/100 units used on 2026-11-21"])
        // Dropping back below 80 % and crossing again does not repeat the warning.
        try await fixture.ledger.refund(eightieth, reason: "test")
        try await fixture.ledger.reserve(endpoint: "e.list")
        for _ in 0..<14 { try await fixture.ledger.reserve(endpoint: "e.list") }
        #expect(warnings().count == 1)
        try await fixture.ledger.reserve(endpoint: "e.list")
        #expect(warnings().last == "Quota bucket b passed 95% of its daily limit: 95/100 units used on 2026-11-21")

        let restarted = try fixture.reopened()
        for _ in 0..<5 { try await restarted.reserve(endpoint: "e.list") }
        #expect(warnings().count == 2)

        fixture.clock.advance(by: .seconds(86_400))
        try await restarted.reserve(endpoint: "e.list", cost: 96)
        #expect(Array(warnings().dropFirst(2)) == [
            "Quota bucket b passed 80% of its daily limit: 96/100 units used on 2026-11-22",
            "Quota bucket b passed 95% of its daily limit: 96/100 units used on 2026-11-22",
        ])
    }

    @Test("an unknown endpoint costs the default in the default bucket and is logged once")
    func unknownEndpoint() async throws {
        let fixture = try Fixture()
        let first = try await fixture.ledger.reserve(endpoint: "liveChatMessages.list")
        try await fixture.ledger.reserve(endpoint: "liveChatMessages.list")
        #expect(first.cost == 1)
        #expect(first.bucket == "youtube")
        #expect(fixture.log.messages(at: .warning) == [
            "Endpoint liveChatMessages.list is not in the quota cost table; charging the default 1 in bucket youtube",
        ])
        #expect(try await fixture.ledger.remaining() == 9998)
        // Another run on the same file says nothing more: once per file, not on every run.
        let again = try fixture.reopened()
        try await again.reserve(endpoint: "liveChatMessages.list")
        #expect(fixture.log.messages(at: .warning).count == 1)
        try await again.reserve(endpoint: "superChats.list")
        #expect(fixture.log.messages(at: .warning).count == 2, "a new unknown endpoint is still said")
    }

    @Test("an operator's limit persists across restarts and wins over the configuration until cleared")
    func adminLimit() async throws {
        let fixture = try Fixture(configuration: smallConfiguration(limit: 100))
        try await fixture.ledger.reserve(endpoint: "e.list", cost: 100)
        await #expect(throws: TollgateError.self) { try await fixture.ledger.reserve(endpoint: "e.list") }

        let raised = try await fixture.ledger.setLimit(bucket: "b", limit: 150)
        #expect(raised.limit == 150)
        #expect(raised.limitSource == .admin)
        #expect(raised.remaining == 50)

        // A restarted process with a different configured limit still sees the operator's.
        let restarted = try fixture.reopened(configuration: smallConfiguration(limit: 300))
        #expect(try await restarted.status(bucket: "b").limit == 150)
        try await restarted.reserve(endpoint: "e.list", cost: 50)
        await #expect(throws: TollgateError.self) { try await restarted.reserve(endpoint: "e.list") }

        // Cleared: the configuration's limit applies again.
        let cleared = try await restarted.setLimit(bucket: "b", limit: nil)
        #expect(cleared.limit == 300)
        #expect(cleared.limitSource == .configuration)
        #expect(try await restarted.remaining(bucket: "b") == 150)

        // A configuration change is written to the bucket (and recorded) at the next reservation.
        let shrunk = try fixture.reopened(configuration: smallConfiguration(limit: 200))
        try await shrunk.reserve(endpoint: "e.list")
        let limits = try await fixture.store.read { db in
            try db.fetchAll(sql: "SELECT daily_limit, limit_source FROM quota_buckets WHERE bucket = 'b'")
        }
        #expect(limits == [Row([200, "configuration"])])
        let limitEvents = try await fixture.store.read { db in
            try db.fetchAll(sql: "SELECT detail FROM quota_events WHERE kind = 'limit' ORDER BY id").compactMap { $0[0].string }
        }
        #expect(limitEvents == [
            "daily limit 100 (configuration)",
            "daily limit 100 (configuration) → 150 (admin)",
            "daily limit 150 (admin) → 300 (configuration)",
            "daily limit 300 → 200 (configuration)",
        ])
        await #expect(throws: QuotaLedgerError.negativeLimit(bucket: "b", limit: -1)) {
            try await fixture.ledger.setLimit(bucket: "b", limit: -1)
        }
        await #expect(throws: QuotaLedgerError.unknownBucket("nope")) {
            try await fixture.ledger.setLimit(bucket: "nope", limit: 1)
        }
    }

    @Test("resetting a day gives its units back with reset events, lifts today's exhausted mark, and deletes nothing")
    func resetDay() async throws {
        let fixture = try Fixture()
        try await fixture.ledger.reserve(endpoint: "search.list")
        try await fixture.ledger.reserve(endpoint: "videos.list")
        let late = try await fixture.ledger.reserve(endpoint: "playlists.insert")
        try await fixture.ledger.markExhausted(bucket: "youtube")
        let eventsBefore = try await fixture.eventCount()

        let today = PacificDay(containing: fixture.clock.now())
        let reset = try await fixture.ledger.resetDay(today)
        #expect(reset.unitsCleared == ["search.list": 100, "videos.list": 1, "playlists.insert": 50])
        #expect(reset.clearedExhaustedMark)
        #expect(try await fixture.ledger.remaining() == 10_000)
        #expect(try await fixture.eventCount() == eventsBefore + 4)
        #expect(try await fixture.ledger.usage().allSatisfy { $0.units == 0 })

        // A refund after the reset cannot take the day below zero: the reset already gave it back.
        #expect(try await fixture.ledger.refund(late, reason: "test") == .refunded(units: 0))
        #expect(try await fixture.ledger.discrepancies().isEmpty)
        try await fixture.ledger.reserve(endpoint: "videos.list")
        #expect(try await fixture.ledger.remaining() == 9999)
    }

    @Test("a charge is committed before reserve returns: a process that dies without settling keeps it")
    func crashKeepsCharge() async throws {
        let fixture = try Fixture()
        do {
            let dying = try fixture.reopened()
            try await dying.reserve(endpoint: "search.list")
        } // released without settling, as a crashed process would leave it
        #expect(try await fixture.reopened().remaining() == 9900)
    }

    @Test("after a mixed workload the per-day totals equal the sum of the events")
    func totalsEqualEvents() async throws {
        let fixture = try Fixture(configuration: {
            var configuration = QuotaConfiguration.youTubeDataAPIv3SinglePool
            configuration.bucketLimits["uploads"] = 5000
            configuration.endpointCosts["videos.insert"] = .init(bucket: "uploads", units: 1600)
            return configuration
        }())
        let endpoints = ["search.list", "videos.list", "playlists.insert", "videos.insert", "captions.download", "x.unknown"]
        var reservations: [QuotaReservation] = []
        for step in 0..<300 {
            let endpoint = endpoints[step % endpoints.count]
            do {
                reservations.append(try await fixture.ledger.reserve(endpoint: endpoint))
            } catch TollgateError.quotaExceeded {}
            if step % 7 == 0, !reservations.isEmpty {
                let reservation = reservations[(step / 7) % reservations.count]
                try await fixture.ledger.settle(reservation, responseStatus: step % 2 == 0 ? 304 : 200)
            }
            if step % 50 == 49 { fixture.clock.advance(by: .seconds(6 * 3600)) }
            if step == 120 { try await fixture.ledger.resetDay(PacificDay(containing: fixture.clock.now()).previous) }
            if step == 200 { try await fixture.ledger.markExhausted(endpoint: "videos.insert") }
        }
        #expect(try await fixture.ledger.discrepancies().isEmpty)
        let mismatches = try await fixture.store.read { db in
            try db.fetchAll(sql: """
                SELECT sums.pacific_date, sums.bucket, sums.endpoint FROM (
                    SELECT pacific_date, bucket, endpoint, SUM(units) AS units FROM quota_events GROUP BY 1, 2, 3
                ) AS sums LEFT JOIN quota_usage AS usage USING (pacific_date, bucket, endpoint)
                WHERE sums.units <> COALESCE(usage.units, 0)
                UNION ALL
                SELECT usage.pacific_date, usage.bucket, usage.endpoint FROM quota_usage AS usage
                WHERE usage.units <> (SELECT COALESCE(SUM(units), 0) FROM quota_events AS event
                                      WHERE event.pacific_date = usage.pacific_date AND event.bucket = usage.bucket
                                        AND event.endpoint = usage.endpoint)
                """)
        }
        #expect(mismatches.isEmpty)
        let rows = try await fixture.store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM quota_usage").int ?? 0 }
        #expect(rows > 6)
    }

    @Test("the discrepancy audit finds a total edited by hand")
    func auditCanFail() async throws {
        let fixture = try Fixture()
        try await fixture.ledger.reserve(endpoint: "search.list")
        try await fixture.store.write { db in try db.execute(sql: "UPDATE quota_usage SET units = 7") }
        #expect(try await fixture.ledger.discrepancies() == [
            QuotaLedgerDiscrepancy(pacificDate: "2026-11-21", bucket: "youtube", endpoint: "search.list", eventUnits: 100, usageUnits: 7),
        ])
    }

    @Test("the seed's single-pool YouTube table prices methods as the seed lists them")
    func youTubeSinglePoolPreset() {
        let table = QuotaConfiguration.youTubeDataAPIv3SinglePool
        let expected = [
            "search.list": 100, "videos.list": 1, "channels.list": 1, "playlists.list": 1, "playlistItems.list": 1,
            "commentThreads.list": 1, "comments.list": 1, "subscriptions.list": 1, "activities.list": 1,
            "captions.list": 50, "videos.update": 50, "videos.rate": 50, "playlists.insert": 50, "thumbnails.set": 50,
            "videos.insert": 1600, "captions.insert": 400, "captions.update": 450, "captions.download": 200,
        ]
        for (method, units) in expected {
            #expect(table.cost(for: method)?.units == units, "\(method)")
        }
        #expect(table.endpointCosts.values.allSatisfy { $0.bucket == "youtube" && $0.notModifiedCost == .units(1) })
        #expect(table.bucketLimits == ["youtube": 10_000])
        #expect(table.endpointCosts.filter { $0.key.hasSuffix(".list") && $0.key != "search.list" && $0.key != "captions.list" }
            .allSatisfy { $0.value.units == 1 })
    }

    @Test("Google's current YouTube model: search.list and videos.insert in buckets of 100 calls, the rest in 10,000 units")
    func youTubeCurrentPreset() throws {
        let table = QuotaConfiguration.youTubeDataAPIv3
        #expect(table.bucketLimits == ["youtube": 10_000, "youtube.search": 100, "youtube.videos.insert": 100])
        #expect(table.cost(for: "search.list") == .init(bucket: "youtube.search", units: 1, notModifiedCost: .units(1)))
        #expect(table.cost(for: "videos.insert") == .init(bucket: "youtube.videos.insert", units: 1, notModifiedCost: .units(1)))
        let shared = ["videos.list": 1, "captions.list": 50, "videos.update": 50, "captions.insert": 400,
                      "captions.update": 450, "captions.download": 200]
        for (method, units) in shared {
            #expect(table.cost(for: method) == .init(bucket: "youtube", units: units, notModifiedCost: .units(1)), "\(method)")
        }
        #expect(table.effectiveCost(for: "x.unknown").notModifiedCost == .units(1))
        var charging = table
        charging.setNotModifiedCost(.full)
        #expect(charging.endpointCosts.values.allSatisfy { $0.notModifiedCost == .full })
        #expect(charging.effectiveCost(for: "x.unknown").notModifiedCost == .full)
        #expect(QuotaConfiguration(bucketLimits: ["b": 1], defaultBucket: "b").effectiveCost(for: "any").notModifiedCost == .full,
                "an API nobody described: a 304 costs the full price")
        try table.validate()
    }

    @Test("searches spent: search.list is refused while videos.list is charged in its own bucket")
    func separateBuckets() async throws {
        let fixture = try Fixture(configuration: .youTubeDataAPIv3)
        for _ in 0..<100 { try await fixture.ledger.reserve(endpoint: "search.list") }
        let error = await #expect(throws: TollgateError.self) {
            try await fixture.ledger.reserve(endpoint: "search.list")
        }
        #expect(error == TollgateError.quotaExceeded(endpoint: "search.list", cost: 1, remaining: 0, resetsAt: utc("2026-11-22T08:00:00Z")))
        let video = try await fixture.ledger.reserve(endpoint: "videos.list")
        #expect(video.bucket == "youtube")
        #expect(try await fixture.ledger.remaining(bucket: "youtube") == 9_999)
        #expect(try await fixture.ledger.remaining(bucket: "youtube.search") == 0)
        #expect(try await fixture.ledger.remaining(bucket: "youtube.videos.insert") == 100)
        #expect(try await fixture.ledger.discrepancies().isEmpty)
    }

    @Test("an inconsistent cost table and a negative cost are refused with typed errors")
    func invalidInput() async throws {
        let missingBucket = QuotaConfiguration(
            bucketLimits: ["b": 10], endpointCosts: ["x.list": .init(bucket: "other", units: 1)], defaultBucket: "b"
        )
        #expect(throws: QuotaLedgerError.invalidConfiguration("x.list is charged in bucket other, which has no daily limit")) {
            try QuotaLedger(storage: SQLiteStore(location: .inMemory), configuration: missingBucket)
        }
        #expect(throws: QuotaLedgerError.self) {
            try QuotaLedger(storage: SQLiteStore(location: .inMemory), configuration: smallConfiguration(limit: -5))
        }
        let fixture = try Fixture()
        await #expect(throws: QuotaLedgerError.negativeCost(endpoint: "videos.list", cost: -3)) {
            try await fixture.ledger.reserve(endpoint: "videos.list", cost: -3)
        }
        #expect(try await fixture.eventCount() == 0)
    }

    @Test("reconcile aligns a day with the provider's count by one event, up or down, and the totals still equal the events")
    func reconcile() async throws {
        let fixture = try Fixture(configuration: .youTubeDataAPIv3)
        for _ in 0..<3 { try await fixture.ledger.reserve(endpoint: "videos.list") }
        let up = try await fixture.ledger.reconcile(used: 10)
        #expect(up.countedBefore == 3 && up.used == 10 && up.adjustment == 7)
        #expect(try await fixture.ledger.remaining() == 9_990)
        let down = try await fixture.ledger.reconcile(used: 2, bucket: "youtube")
        #expect(down.adjustment == -8)
        #expect(try await fixture.ledger.remaining() == 9_998)
        let searches = try await fixture.ledger.reconcile(used: 100, bucket: "youtube.search")
        #expect(searches.adjustment == 100)
        await #expect(throws: TollgateError.self) { try await fixture.ledger.reserve(endpoint: "search.list") }
        #expect(try await fixture.ledger.discrepancies().isEmpty)
        let events = try await fixture.store.read { db in
            try db.fetchAll(sql: "SELECT kind, endpoint, units FROM quota_events WHERE endpoint = '*' AND units <> 0 ORDER BY id")
        }
        #expect(events == [Row(["charge", "*", 7]), Row(["reset", "*", -8]), Row(["charge", "*", 100])])
        await #expect(throws: QuotaLedgerError.self) { try await fixture.ledger.reconcile(used: 5, bucket: "nope") }
        // A refund after the count was lowered never takes the bucket below zero.
        let before = try await fixture.ledger.reserve(endpoint: "videos.list")
        try await fixture.ledger.reconcile(used: 0)
        _ = try await fixture.ledger.settle(before, responseStatus: 304)
        #expect(try await fixture.ledger.remaining() == 10_000)
        #expect(try await fixture.ledger.status().unitsUsed == 0)
        #expect(try await fixture.ledger.discrepancies().isEmpty)
        await #expect(throws: StoreRefusal.self) { try await fixture.ledger.reconcile(used: -1) }
    }

    @Test("the forecast: the last hour's burn rate, and when a bucket runs out at it if before the reset")
    func forecast() async throws {
        var configuration = QuotaConfiguration.youTubeDataAPIv3
        configuration.bucketLimits["youtube"] = 100
        // 10:00 in Los Angeles: 14 hours before the reset.
        let fixture = try Fixture(configuration: configuration, now: utc("2026-11-21T18:00:00Z"))
        for _ in 0..<10 { try await fixture.ledger.reserve(endpoint: "videos.list") }
        fixture.clock.advance(by: .seconds(1800))
        for _ in 0..<40 { try await fixture.ledger.reserve(endpoint: "videos.list") }
        fixture.clock.advance(by: .seconds(1800))
        // The first 10 are an hour old: the rate over the last hour counts the 40 (and the window's edge).
        let forecasts = try await fixture.ledger.forecast()
        let youtube = try #require(forecasts.first { $0.bucket == "youtube" })
        #expect(youtube.remaining == 50)
        #expect((40...50).contains(Int(youtube.unitsPerHour)), "\(youtube.unitsPerHour)")
        let runsOut = try #require(youtube.runsOutAt)
        #expect(runsOut > fixture.clock.now() && runsOut < youtube.resetsAt)
        let searches = try #require(forecasts.first { $0.bucket == "youtube.search" })
        #expect(searches.unitsPerHour == 0 && searches.runsOutAt == nil)
    }
}

@Suite("Quota: one call charged in several buckets")
struct MultiBucketChargeTests {
    /// `reports.query` costs 5 units of `daily` and 1 call of `perMinuteish` — an API that meters
    /// one call in two quotas.
    static func configuration(secondLimit: Int = 3) -> QuotaConfiguration {
        QuotaConfiguration(
            bucketLimits: ["daily": 100, "calls": secondLimit],
            endpointCosts: ["reports.query": .init(bucket: "daily", units: 5, notModifiedCost: .free,
                                                   additionalCharges: [.init(bucket: "calls", units: 1)])],
            defaultBucket: "daily"
        )
    }

    @Test("a reservation charges every bucket of the endpoint in one transaction, all or nothing, and a refund gives all back")
    func allOrNothing() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("multi.sqlite"))
        let ledger = try QuotaLedger(storage: store, configuration: Self.configuration(), clock: ManualClock(now: utc("2026-11-21T18:00:00Z")))
        #expect(Self.configuration().effectiveCost(for: "reports.query").charges.map(\.bucket) == ["daily", "calls"])

        let first = try await ledger.reserve(endpoint: "reports.query")
        #expect(try await ledger.remaining(bucket: "daily") == 95)
        #expect(try await ledger.remaining(bucket: "calls") == 2)
        #expect(try await ledger.settle(first, responseStatus: 304) == .refunded(units: 5))
        #expect(try await ledger.remaining(bucket: "daily") == 100)
        #expect(try await ledger.remaining(bucket: "calls") == 3, "the refund gives every bucket back")
        #expect(try await ledger.settle(first, responseStatus: 304) == .alreadyRefunded)

        for _ in 0..<3 { try await ledger.reserve(endpoint: "reports.query") }
        // `calls` is spent although `daily` could pay: nothing at all is charged.
        let error = await #expect(throws: TollgateError.self) { try await ledger.reserve(endpoint: "reports.query") }
        guard case .quotaExceeded(let endpoint, _, let remaining, _)? = error else {
            Issue.record("expected quotaExceeded, got \(String(describing: error))")
            return
        }
        #expect(endpoint == "reports.query" && remaining == 0)
        #expect(try await ledger.remaining(bucket: "daily") == 85)
        #expect(try await ledger.discrepancies().isEmpty)
    }

    @Test("a cost table that charges an endpoint in a bucket without a limit, or twice in one, is refused")
    func invalidTables() throws {
        var missing = Self.configuration()
        missing.endpointCosts["x.list"] = .init(bucket: "daily", units: 1, additionalCharges: [.init(bucket: "nope", units: 1)])
        #expect(throws: QuotaLedgerError.invalidConfiguration("x.list is also charged in bucket nope, which has no daily limit")) {
            try missing.validate()
        }
        var twice = Self.configuration()
        twice.endpointCosts["x.list"] = .init(bucket: "daily", units: 1, additionalCharges: [.init(bucket: "daily", units: 1)])
        #expect(throws: QuotaLedgerError.self) { try twice.validate() }
    }
}
