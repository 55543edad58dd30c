import Foundation
import Testing
import TollgatePostgres
import TollgateStore
import TollgateTestSupport

/// Windows beyond the Pacific day, announced limits, pacing and settled costs (issue 32), written
/// once and run against every available store.
///
/// Time is a `ManualClock`: SQLiteStore reads each call's `at`, PostgresStore its window clock in
/// place of the database's now (``StoreBackend/withStore(windowClock:_:)``), so an hour ends and the
/// next begins without waiting. Every bucket here counts another window than the Pacific day,
/// which PostgresStore computes from that one "now".
@Suite("Quota window store conformance")
struct QuotaWindowConformanceTests {
    /// 2026-11-27 at `hour`:`minute`:`second` UTC (10:00 UTC is 02:00 in Los Angeles, 19:00 in Tokyo).
    static func utc(_ hour: Int, _ minute: Int = 0, _ second: Double = 0) -> Date {
        // 1_795_773_600 is 2026-11-27T10:00:00Z.
        Date(timeIntervalSince1970: 1_795_773_600 + Double((hour - 10) * 3600 + minute * 60) + second)
    }

    private func request(
        _ clock: ManualClock, bucket: String = "b", endpoint: String = "e.list", cost: Int, limit: Int,
        window: QuotaWindow, pacing: QuotaPacing? = nil, additionalCharges: [QuotaBucketCharge] = []
    ) -> QuotaReservationRequest {
        QuotaReservationRequest(
            bucket: bucket, endpoint: endpoint, cost: cost, configuredLimit: limit, at: clock.now(),
            additionalCharges: additionalCharges, window: window, pacing: pacing
        )
    }

    private func status(
        _ store: any ConformingStore, _ clock: ManualClock, bucket: String = "b", limit: Int, window: QuotaWindow
    ) async throws -> QuotaBucketStatus {
        try await store.quotaBucketStatus(bucket: bucket, configuredLimit: limit, window: window, at: clock.now())
    }

    @Test("an hourly bucket counts its charges per clock hour, keyed by the hour's start; the next hour starts empty",
          arguments: StoreBackend.available)
    func hourly(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 59, 0))
        try await backend.withStore(windowClock: clock) { store in
            let first = try #require(try await store.reserveQuota(request(clock, cost: 3, limit: 10, window: .hour)).charge)
            let second = try #require(try await store.reserveQuota(request(clock, endpoint: "f.list", cost: 4, limit: 10,
                                                                            window: .hour)).charge)
            #expect(first.period.key == "2026-11-27T10:00:00Z")
            #expect(second.period == QuotaPeriod(key: "2026-11-27T10:00:00Z", start: Self.utc(10), end: Self.utc(11)))
            #expect(second.bucketUnitsUsed == 7)
            #expect(second.resetsAt == Self.utc(11))
            clock.set(to: Self.utc(10, 59, 59.5))
            #expect(try await status(store, clock, limit: 10, window: .hour).unitsUsed == 7)

            clock.set(to: Self.utc(11))
            let now = try await status(store, clock, limit: 10, window: .hour)
            #expect(now.unitsUsed == 0)
            #expect(now.period.key == "2026-11-27T11:00:00Z")
            let next = try #require(try await store.reserveQuota(request(clock, cost: 10, limit: 10, window: .hour)).charge)
            #expect(next.bucketUnitsUsed == 10)
            #expect(next.period.key == "2026-11-27T11:00:00Z")
            #expect(next.resetsAt == Self.utc(12))
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            // The window is stored with the bucket: the status without one reads it.
            let stored = try await store.quotaBucketStatus(bucket: "b", configuredLimit: 10, at: clock.now())
            #expect(stored.window == .hour)
            #expect(stored.unitsUsed == 10)
        }
    }

    @Test("at the limit a charge is refused, nothing written, and resetsAt is the end of the window",
          arguments: StoreBackend.available)
    func refusedUntilTheWindowEnds(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 20))
        try await backend.withStore(windowClock: clock) { store in
            _ = try #require(try await store.reserveQuota(request(clock, cost: 10, limit: 10, window: .hour)).charge)
            let refusal = try #require(try await store.reserveQuota(request(clock, cost: 1, limit: 10, window: .hour)).refusal)
            #expect(refusal.reason == .overBudget)
            #expect(refusal.bucketUnitsUsed == 10)
            #expect(refusal.remaining == 0)
            #expect(refusal.resetsAt == Self.utc(11))
            #expect(refusal.retryAt == Self.utc(11))
            #expect(refusal.period.key == "2026-11-27T10:00:00Z")
            #expect(try await status(store, clock, limit: 10, window: .hour).unitsUsed == 10)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("a minute bucket counts per clock minute", arguments: StoreBackend.available)
    func minute(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 0, 30))
        try await backend.withStore(windowClock: clock) { store in
            for _ in 0..<2 {
                _ = try #require(try await store.reserveQuota(request(clock, cost: 1, limit: 2, window: .minute)).charge)
            }
            let refusal = try #require(try await store.reserveQuota(request(clock, cost: 1, limit: 2, window: .minute)).refusal)
            #expect(refusal.resetsAt == Self.utc(10, 1))
            clock.set(to: Self.utc(10, 1))
            let next = try #require(try await store.reserveQuota(request(clock, cost: 2, limit: 2, window: .minute)).charge)
            #expect(next.period.key == "2026-11-27T10:01:00Z")
            #expect(next.bucketUnitsUsed == 2)
        }
    }

    @Test("a rolling window still counts a charge N - 1 seconds later, and no longer after N seconds and a slice",
          arguments: StoreBackend.available)
    func rolling(backend: StoreBackend) async throws {
        // 120 seconds, counted in slices of 2.
        let window = QuotaWindow.rolling(seconds: 120)
        let clock = ManualClock(now: Self.utc(10, 0, 0))
        try await backend.withStore(windowClock: clock) { store in
            _ = try #require(try await store.reserveQuota(request(clock, cost: 5, limit: 8, window: window)).charge)
            clock.advance(by: .seconds(30))
            let later = try #require(try await store.reserveQuota(request(clock, cost: 3, limit: 8, window: window)).charge)
            #expect(later.bucketUnitsUsed == 8, "both charges count, each under its own slice")

            clock.set(to: Self.utc(10, 1, 59))
            #expect(try await status(store, clock, limit: 8, window: window).unitsUsed == 8)
            let refusal = try #require(try await store.reserveQuota(request(clock, cost: 1, limit: 8, window: window)).refusal)
            #expect(refusal.reason == .overBudget)

            clock.set(to: Self.utc(10, 2, 2))
            #expect(try await status(store, clock, limit: 8, window: window).unitsUsed == 3, "the first charge left")
            let again = try #require(try await store.reserveQuota(request(clock, cost: 5, limit: 8, window: window)).charge)
            #expect(again.bucketUnitsUsed == 8)
            clock.set(to: Self.utc(10, 2, 32))
            #expect(try await status(store, clock, limit: 8, window: window).unitsUsed == 5)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("a day in another time zone is keyed by its local date and ends at its local midnight",
          arguments: StoreBackend.available)
    func dayInTokyo(backend: StoreBackend) async throws {
        let tokyo = QuotaWindow.day(timeZone: "Asia/Tokyo")
        // 15:30 UTC on the 27th: 00:30 on the 28th in Tokyo, still the 27th in Los Angeles.
        let clock = ManualClock(now: Self.utc(15, 30))
        try await backend.withStore(windowClock: clock) { store in
            let charge = try #require(try await store.reserveQuota(request(clock, bucket: "jp", cost: 4, limit: 5,
                                                                            window: tokyo)).charge)
            #expect(charge.period.key == "2026-11-28")
            #expect(charge.period.start == Self.utc(15))
            #expect(charge.resetsAt == Self.utc(15).addingTimeInterval(86_400))
            #expect(charge.day.key == "2026-11-27")

            clock.set(to: Self.utc(15).addingTimeInterval(86_400 - 1))
            #expect(try await status(store, clock, bucket: "jp", limit: 5, window: tokyo).unitsUsed == 4)
            clock.set(to: Self.utc(15).addingTimeInterval(86_400))
            let next = try #require(try await store.reserveQuota(request(clock, bucket: "jp", cost: 5, limit: 5,
                                                                          window: tokyo)).charge)
            #expect(next.period.key == "2026-11-29")
            #expect(next.bucketUnitsUsed == 5)

            let windows = try await store.quotaWindows(at: clock.now())
            #expect(windows.map(\.bucket) == ["jp"])
            #expect(windows.first?.window == tokyo)
            #expect(windows.first?.period.key == "2026-11-29")
            #expect(windows.first?.unitsUsed == 5)
        }
    }

    @Test("the server's exhausted mark closes a windowed bucket until the window's end, not the Pacific midnight",
          arguments: StoreBackend.available)
    func exhaustedUntilTheWindowEnds(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 20))
        try await backend.withStore(windowClock: clock) { store in
            _ = try #require(try await store.reserveQuota(request(clock, cost: 1, limit: 100, window: .hour)).charge)
            let mark = try await store.markQuotaExhausted(bucket: "b", configuredLimit: 100, endpoint: "e.list", at: clock.now())
            #expect(mark == QuotaExhaustion(bucket: "b", until: Self.utc(11), isNew: true))
            let refusal = try #require(try await store.reserveQuota(request(clock, cost: 1, limit: 100, window: .hour)).refusal)
            #expect(refusal.reason == .exhaustedByServer)
            #expect(try await status(store, clock, limit: 100, window: .hour).isExhausted)
            clock.set(to: Self.utc(11))
            _ = try #require(try await store.reserveQuota(request(clock, cost: 1, limit: 100, window: .hour)).charge)
        }
    }

    @Test("an announcement below the ledger's count pulls it down with an 'announced' event on '*'; one above never pushes it up",
          arguments: StoreBackend.available)
    func announcementFollowsDownNeverUp(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 20))
        func announcement(remaining: Int) -> QuotaAnnouncement {
            QuotaAnnouncement(bucket: "core", endpoint: "repos.get", configuredLimit: 5000, window: .hour,
                              remaining: remaining, resetsAt: nil, at: clock.now())
        }
        try await backend.withStore(windowClock: clock) { store in
            _ = try #require(try await store.reserveQuota(request(clock, bucket: "core", endpoint: "repos.get", cost: 10,
                                                                   limit: 5000, window: .hour)).charge)
            let down = try await store.recordQuotaAnnouncement(announcement(remaining: 4000))
            #expect(down.unitsFollowed == 990)
            #expect(down.unitsUsed == 1000)
            #expect(down.remaining == 4000)
            #expect(!down.movedReset)
            #expect(down.period.key == "2026-11-27T10:00:00Z")
            #expect(try await status(store, clock, bucket: "core", limit: 5000, window: .hour).unitsUsed == 1000)
            let events = try await store.dashboardSnapshot(at: clock.now(), recentEvents: 10).recentLedgerEvents
            #expect(events.contains { $0.kind == "announced" && $0.endpoint == "*" && $0.bucket == "core" && $0.units == 990 })
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)

            for remaining in [4500, 6000] {
                let up = try await store.recordQuotaAnnouncement(announcement(remaining: remaining))
                #expect(up.unitsFollowed == 0, "\(remaining)")
                #expect(up.remaining == 4000)
            }
            #expect(try await status(store, clock, bucket: "core", limit: 5000, window: .hour).unitsUsed == 1000)
            await #expect(throws: StoreRefusal.self) { try await store.recordQuotaAnnouncement(announcement(remaining: -1)) }
            // What the server said is usage like any other: it runs out with the window.
            clock.set(to: Self.utc(11))
            #expect(try await status(store, clock, bucket: "core", limit: 5000, window: .hour).unitsUsed == 0)
        }
    }

    @Test("an announced reset moves the window's end earlier, and a new window keyed by the reset starts after it",
          arguments: StoreBackend.available)
    func announcedReset(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 20))
        try await backend.withStore(windowClock: clock) { store in
            _ = try #require(try await store.reserveQuota(request(clock, cost: 60, limit: 100, window: .hour)).charge)
            let outcome = try await store.recordQuotaAnnouncement(QuotaAnnouncement(
                bucket: "b", endpoint: "e.list", configuredLimit: 100, window: .hour, remaining: 40,
                resetsAt: Self.utc(10, 50), at: clock.now()
            ))
            #expect(outcome.movedReset)
            #expect(outcome.unitsFollowed == 0)
            #expect(outcome.period.end == Self.utc(10, 50))
            #expect(try await status(store, clock, limit: 100, window: .hour).resetsAt == Self.utc(10, 50))
            clock.set(to: Self.utc(10, 49, 59))
            let refusal = try #require(try await store.reserveQuota(request(clock, cost: 50, limit: 100, window: .hour)).refusal)
            #expect(refusal.resetsAt == Self.utc(10, 50))
            #expect(refusal.period.key == "2026-11-27T10:00:00Z")

            clock.set(to: Self.utc(10, 50))
            let charge = try #require(try await store.reserveQuota(request(clock, cost: 50, limit: 100, window: .hour)).charge)
            #expect(charge.period == QuotaPeriod(key: "2026-11-27T10:50:00Z", start: Self.utc(10, 50), end: Self.utc(11)))
            #expect(charge.bucketUnitsUsed == 50, "the new window starts empty")
            // The natural hour after it is the hour again.
            clock.set(to: Self.utc(11))
            #expect(try await status(store, clock, limit: 100, window: .hour).period.key == "2026-11-27T11:00:00Z")
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("a paced bucket refuses with .paced and the time of its next slot, and charges at that time",
          arguments: StoreBackend.available)
    func pacing(backend: StoreBackend) async throws {
        let pacing = QuotaPacing(reserveFraction: 0.1)
        let clock = ManualClock(now: Self.utc(10))
        try await backend.withStore(windowClock: clock) { store in
            func reserve(_ cost: Int) async throws -> QuotaReservationOutcome {
                try await store.reserveQuota(request(clock, cost: cost, limit: 100, window: .hour, pacing: pacing))
            }
            // Half spent at the start of the hour: the rest is not yet short of an even share.
            _ = try #require(try await reserve(50).charge)
            // Half an hour later, 40 spendable (10 kept back) is less than the 45 an even share
            // gives: paced. The first paced charge goes at once.
            clock.set(to: Self.utc(10, 30))
            _ = try #require(try await reserve(1).charge)
            let refusal = try #require(try await reserve(1).refusal)
            #expect(refusal.reason == .paced)
            // 39 units spendable over the 1,800 s left: one every 1800/39 s after the last paced charge.
            #expect(abs(refusal.retryAt.timeIntervalSince(Self.utc(10, 30)) - 1800.0 / 39) < 0.001)
            #expect(refusal.resetsAt == Self.utc(11))
            #expect(refusal.bucketUnitsUsed == 51)
            #expect(refusal.remaining == 49)

            clock.set(to: refusal.retryAt)
            let paced = try #require(try await reserve(1).charge)
            #expect(paced.bucketUnitsUsed == 52)
            #expect(try #require(try await reserve(1).refusal).reason == .paced)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("settling charges or refunds the difference once; a refund afterwards gives back the actual cost",
          arguments: StoreBackend.available)
    func settleTheDifference(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 5))
        try await backend.withStore(windowClock: clock) { store in
            let charge = try #require(try await store.reserveQuota(request(clock, bucket: "tokens", cost: 500, limit: 1000,
                                                                            window: .hour)).charge)
            let settled = try await store.settleQuotaCost(reservationID: charge.reservationID, bucket: "tokens",
                                                          actualUnits: 300, at: clock.now(), detail: "usage.total_tokens")
            #expect(settled == .settled(difference: -200, actualUnits: 300, overLimit: false))
            #expect(try await status(store, clock, bucket: "tokens", limit: 1000, window: .hour).unitsUsed == 300)
            #expect(try await store.settleQuotaCost(reservationID: charge.reservationID, bucket: "tokens", actualUnits: 900,
                                                    at: clock.now(), detail: nil) == .alreadySettled)
            let events = try await store.dashboardSnapshot(at: clock.now(), recentEvents: 10).recentLedgerEvents
            #expect(events.filter { $0.kind == "settle" }.map(\.units) == [-200])
            await #expect(throws: StoreRefusal.self) {
                try await store.settleQuotaCost(reservationID: charge.reservationID, bucket: "other", actualUnits: 1,
                                                at: clock.now(), detail: nil)
            }
            await #expect(throws: StoreRefusal.self) {
                try await store.settleQuotaCost(reservationID: charge.reservationID, bucket: "tokens", actualUnits: -1,
                                                at: clock.now(), detail: nil)
            }

            let refund = try await store.refundQuota(reservationID: charge.reservationID, at: clock.now(), reason: "failed")
            #expect(refund == .refunded(units: 300, day: charge.day))
            #expect(try await status(store, clock, bucket: "tokens", limit: 1000, window: .hour).unitsUsed == 0)
            // A refunded charge is not settled afterwards.
            let other = try #require(try await store.reserveQuota(request(clock, bucket: "tokens", cost: 10, limit: 1000,
                                                                           window: .hour)).charge)
            _ = try await store.refundQuota(reservationID: other.reservationID, at: clock.now(), reason: nil)
            #expect(try await store.settleQuotaCost(reservationID: other.reservationID, bucket: "tokens", actualUnits: 50,
                                                    at: clock.now(), detail: nil) == .alreadySettled)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("an actual cost above the estimate may take the window past its limit: recorded so, refused until the next window",
          arguments: StoreBackend.available)
    func settlePastTheLimit(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 5))
        try await backend.withStore(windowClock: clock) { store in
            func reserve(_ cost: Int) async throws -> QuotaReservationOutcome {
                try await store.reserveQuota(request(clock, bucket: "tokens", cost: cost, limit: 1000, window: .hour))
            }
            let first = try #require(try await reserve(500).charge)
            _ = try #require(try await reserve(400).charge)
            let settled = try await store.settleQuotaCost(reservationID: first.reservationID, bucket: "tokens",
                                                          actualUnits: 800, at: clock.now(), detail: nil)
            #expect(settled == .settled(difference: 300, actualUnits: 800, overLimit: true))
            let over = try await status(store, clock, bucket: "tokens", limit: 1000, window: .hour)
            #expect(over.unitsUsed == 1200)
            #expect(over.remaining == 0)
            let refusal = try #require(try await reserve(1).refusal)
            #expect(refusal.reason == .overBudget)
            #expect(refusal.bucketUnitsUsed == 1200)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)

            clock.set(to: Self.utc(11))
            let next = try #require(try await reserve(1000).charge)
            #expect(next.bucketUnitsUsed == 1000)
            // The refund of a settled charge gives back its actual cost, in its own window.
            #expect(try await store.refundQuota(reservationID: first.reservationID, at: clock.now(), reason: nil)
                == .refunded(units: 800, day: first.day))
            clock.set(to: Self.utc(10, 59))
            #expect(try await status(store, clock, bucket: "tokens", limit: 1000, window: .hour).unitsUsed == 400)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("in a rolling window a settlement is past the limit when the whole window is, not only the charge's slice",
          arguments: StoreBackend.available)
    func settlePastTheLimitOfARollingWindow(backend: StoreBackend) async throws {
        let window = QuotaWindow.rolling(seconds: 120)
        let clock = ManualClock(now: Self.utc(10))
        try await backend.withStore(windowClock: clock) { store in
            func reserve(_ cost: Int) async throws -> QuotaReservationOutcome {
                try await store.reserveQuota(request(clock, bucket: "tokens", cost: cost, limit: 10, window: window))
            }
            _ = try #require(try await reserve(6).charge)
            clock.advance(by: .seconds(30))
            let second = try #require(try await reserve(4).charge)
            let settled = try await store.settleQuotaCost(reservationID: second.reservationID, bucket: "tokens",
                                                          actualUnits: 5, at: clock.now(), detail: nil)
            #expect(settled == .settled(difference: 1, actualUnits: 5, overLimit: true), "6 + 5 in the window of 10")
            #expect(try #require(try await reserve(1).refusal).bucketUnitsUsed == 11)
            // Once the first charge has left the window there is room again.
            clock.set(to: Self.utc(10, 2, 2))
            #expect(try #require(try await reserve(5).charge).bucketUnitsUsed == 10)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("an attempt's settlement settles its actual costs, in a further bucket too, and follows its announcements",
          arguments: StoreBackend.available)
    func settlementInTheAdmissionPath(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 0, 15))
        let policy = CircuitPolicy()
        try await backend.withStore(windowClock: clock) { store in
            let tokens = QuotaBucketCharge(bucket: "tokens", cost: 500, configuredLimit: 10_000, window: .minute)
            let admission = try await store.admit(AdmissionRequest(
                endpoint: "chat.completions", circuitPolicy: policy, probeToken: "p",
                throttleLimit: ThrottleLimit(requests: 100, per: .seconds(60)),
                quota: request(clock, bucket: "requests", endpoint: "chat.completions", cost: 1, limit: 60,
                               window: .minute, additionalCharges: [tokens])
            ))
            guard case .admitted(_, _, let charge) = admission else {
                Issue.record("expected an admission: \(admission)")
                return
            }
            #expect(charge.period.key == "2026-11-27T10:00:00Z")
            #expect(try await status(store, clock, bucket: "tokens", limit: 10_000, window: .minute).unitsUsed == 500)

            clock.advance(by: .seconds(2))
            let result = try await store.settleAttempt(AttemptSettlement(
                endpoint: "chat.completions", outcome: .success, probeToken: nil, circuitPolicy: policy,
                actualCosts: [QuotaActualCost(reservationID: charge.reservationID, bucket: "tokens", units: 650,
                                              source: "body usage.total_tokens")],
                announcements: [QuotaAnnouncement(bucket: "requests", endpoint: "chat.completions", configuredLimit: 60,
                                                  window: .minute, remaining: 50, resetsAt: nil, at: clock.now())],
                at: clock.now()
            ))
            #expect(result.costs == [.settled(difference: 150, actualUnits: 650, overLimit: false)])
            #expect(result.announcements.map(\.unitsFollowed) == [9])
            #expect(try await status(store, clock, bucket: "tokens", limit: 10_000, window: .minute).unitsUsed == 650)
            #expect(try await status(store, clock, bucket: "requests", limit: 60, window: .minute).unitsUsed == 10)
            #expect(try await store.settleQuotaCost(reservationID: charge.reservationID, bucket: "tokens", actualUnits: 700,
                                                    at: clock.now(), detail: nil) == .alreadySettled)
            // The refund of the reservation gives back both buckets' actual costs.
            #expect(try await store.refundQuota(reservationID: charge.reservationID, at: clock.now(), reason: nil)
                == .refunded(units: 1, day: charge.day))
            #expect(try await status(store, clock, bucket: "tokens", limit: 10_000, window: .minute).unitsUsed == 0)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("a stream's settlement at its end: what it reported, or, cut short before it reported, the estimate again (a settle event of 0 units, and the charge counts as settled)",
          arguments: StoreBackend.available)
    func settlementAtAStreamsEnd(backend: StoreBackend) async throws {
        let clock = ManualClock(now: Self.utc(10, 0, 15))
        let policy = CircuitPolicy()
        try await backend.withStore(windowClock: clock) { store in
            func admitted() async throws -> Int64? {
                let tokens = QuotaBucketCharge(bucket: "tokens", cost: 1_000, configuredLimit: 30_000, window: .minute)
                let admission = try await store.admit(AdmissionRequest(
                    endpoint: "chat.completions", circuitPolicy: policy, probeToken: "p",
                    throttleLimit: ThrottleLimit(requests: 100, per: .seconds(60)),
                    quota: request(clock, bucket: "requests", endpoint: "chat.completions", cost: 1, limit: 500,
                                   window: .minute, additionalCharges: [tokens])
                ))
                guard case .admitted(_, _, let charge) = admission else { return nil }
                return charge.reservationID
            }
            func settled(_ reservation: Int64, units: Int, source: String) async throws -> [QuotaCostSettlement] {
                try await store.settleAttempt(AttemptSettlement(
                    endpoint: "chat.completions", outcome: .success, probeToken: nil, circuitPolicy: policy,
                    actualCosts: [QuotaActualCost(reservationID: reservation, bucket: "tokens", units: units, source: source)],
                    at: clock.now()
                )).costs
            }
            let whole = try #require(try await admitted())
            let cut = try #require(try await admitted())
            clock.advance(by: .seconds(3))
            #expect(try await settled(whole, units: 15, source: "body usage.total_tokens")
                == [.settled(difference: -985, actualUnits: 15, overLimit: false)])
            #expect(try await settled(cut, units: 1_000,
                                      source: "a stream cut short before it told body usage.total_tokens: the estimate stands")
                == [.settled(difference: 0, actualUnits: 1_000, overLimit: false)])
            #expect(try await store.settleQuotaCost(reservationID: cut, bucket: "tokens", actualUnits: 10, at: clock.now(),
                                                    detail: nil) == .alreadySettled)
            #expect(try await status(store, clock, bucket: "tokens", limit: 30_000, window: .minute).unitsUsed == 1_015)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }
}

/// Many machines charging one windowed bucket at once: the bucket's row lock orders them (on
/// PostgreSQL; SQLite's write transaction on one file), so the window's sum, not only one key's,
/// stays within the limit.
@Suite("Quota window concurrency conformance")
struct QuotaWindowConcurrencyConformanceTests {
    @Test("many tasks on several stores charging the last units of a window never overspend it, across its keys too",
          arguments: StoreBackend.available, [QuotaWindow.hour, .rolling(seconds: 60)])
    func concurrentReservations(backend: StoreBackend, window: QuotaWindow) async throws {
        let limit = 2_000
        let clock = ManualClock(now: QuotaWindowConformanceTests.utc(10, 30))
        try await backend.withStores(count: 4, windowClock: clock) { stores in
            func request(_ cost: Int, endpoint: String) -> QuotaReservationRequest {
                QuotaReservationRequest(bucket: "shared", endpoint: endpoint, cost: cost, configuredLimit: limit,
                                        at: clock.now(), window: window)
            }
            _ = try #require(try await stores[0].reserveQuota(request(1_980, endpoint: "e.list")).charge)
            // A second later: the same hour; the next slice of the rolling minute, a key of its own
            // whose row alone (10 of 2,000) would let every one of the charges below through.
            clock.advance(by: .seconds(1))
            _ = try #require(try await stores[0].reserveQuota(request(10, endpoint: "e.list")).charge)
            let charges = try await withThrowingTaskGroup(of: QuotaCharge?.self) { group in
                for worker in 0..<32 {
                    let store = stores[worker % stores.count]
                    group.addTask { try await store.reserveQuota(request(10, endpoint: "e\(worker % 3).list")).charge }
                }
                return try await group.reduce(into: [QuotaCharge]()) { charges, charge in
                    if let charge { charges.append(charge) }
                }
            }
            #expect(charges.count == 1, "10 units were left: one charge of 10")
            #expect(charges.first?.bucketUnitsUsed == limit)
            let status = try await stores[1].quotaBucketStatus(bucket: "shared", configuredLimit: limit, window: window,
                                                               at: clock.now())
            #expect(status.unitsUsed == limit)
            #expect(try await stores[2].quotaLedgerDiscrepancies().isEmpty)
        }
    }
}

/// A file or database made before windows existed keeps its meaning: its buckets count the Pacific
/// day, and `quota_today` shows them as before. The old rows are written as the old schema's code
/// wrote them (this library's code reads the new schema only), on today's Pacific date: real time,
/// since PostgreSQL decides the Pacific day by its own clock.
@Suite("Quota window migration conformance")
struct QuotaWindowMigrationConformanceTests {
    /// What `quota_today` shows, one text per row, in both stores' SQL.
    private static let quotaToday = """
        SELECT bucket || ' ' || COALESCE(endpoint, '-') || ' units=' || units || ' calls=' || calls
               || ' limit=' || bucket_limit || ' remaining=' || bucket_remaining || ' bucket=' || bucket_units
               || ' exhausted=' || bucket_exhausted AS line
        FROM quota_today ORDER BY bucket, endpoint
        """

    /// Two buckets, one closed by the server until the next Pacific midnight, charged today and
    /// yesterday, with the events that explain every total.
    private static func oldLedger(today: PacificDay, withBucketDays: Bool) -> [String] {
        let (day, yesterday, resetMs) = (today.key, today.previous.key, Int64(today.nextReset.timeIntervalSince1970 * 1000))
        var statements = [
            """
            INSERT INTO quota_buckets (bucket, daily_limit, limit_source, exhausted_until_ms, updated_at_ms)
            VALUES ('youtube', 10000, 'configuration', NULL, 0), ('youtube.search', 100, 'configuration', \(resetMs), 0)
            """,
            """
            INSERT INTO quota_usage (pacific_date, bucket, endpoint, units, calls)
            VALUES ('\(day)', 'youtube', 'videos.list', 3, 1), ('\(day)', 'youtube', 'search.list', 100, 1),
                   ('\(day)', 'youtube.search', 'search.list', 1, 1), ('\(yesterday)', 'youtube', 'videos.list', 7, 2)
            """,
            """
            INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units)
            VALUES (0, '\(day)', 'youtube', 'videos.list', 'charge', 3), (0, '\(day)', 'youtube', 'search.list', 'charge', 100),
                   (0, '\(day)', 'youtube.search', 'search.list', 'charge', 1),
                   (0, '\(day)', 'youtube.search', 'search.list', 'exhausted', 0),
                   (0, '\(yesterday)', 'youtube', 'videos.list', 'charge', 3), (0, '\(yesterday)', 'youtube', 'videos.list', 'charge', 4)
            """,
        ]
        if withBucketDays {
            statements.append("""
                INSERT INTO quota_bucket_days (pacific_date, bucket, units, ceiling)
                VALUES ('\(day)', 'youtube', 103, 10000), ('\(day)', 'youtube.search', 1, 100), ('\(yesterday)', 'youtube', 7, 10000)
                """)
        }
        return statements
    }

    @Test("the migration keeps quota_today as it was for Pacific-day buckets, and they keep counting the same day",
          arguments: StoreBackend.available)
    func migrationKeepsThePacificDay(backend: StoreBackend) async throws {
        let today = PacificDay(containing: Date())
        switch backend {
        case .sqlite:
            let directory = try TemporaryDirectory()
            let path = directory.path("old.sqlite")
            let old = try SQLiteStore(path: path, configuration: .init(migrations: Array(Migration.all.prefix(5))),
                                      logger: PostgresTestDatabase.quietLogger)
            try await old.write { db in
                for statement in Self.oldLedger(today: today, withBucketDays: false) { try db.execute(sql: statement) }
            }
            func quotaToday(_ store: SQLiteStore) throws -> [String] {
                try store.read { db in try db.fetchAll(sql: Self.quotaToday).map { try $0.decode(String.self, forColumn: "line") } }
            }
            let before = try quotaToday(old)
            let migrated = try SQLiteStore(path: path, logger: PostgresTestDatabase.quietLogger)
            #expect(before.count == 3)
            #expect(try quotaToday(migrated) == before)
            try await keepsCounting(migrated, today: today)
        case .postgres:
            try await PostgresTestDatabase.with { database in
                let versionThree = PostgresStore.Configuration(migrations: Array(PostgresMigrations.all.prefix(3)))
                let old = try await PostgresStore(url: database.url, configuration: versionThree,
                                                  logger: PostgresTestDatabase.quietLogger)
                await old.shutdown()
                for statement in Self.oldLedger(today: today, withBucketDays: true) { try await database.execute(statement) }
                let aggregate = "SELECT string_agg(line, '|' ORDER BY n) FROM (SELECT row_number() OVER () AS n, line FROM ("
                    + Self.quotaToday + ") AS lines) AS numbered"
                let before = try await database.textValue(aggregate)
                let migrated = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
                #expect(migrated.migrationsAppliedAtOpen.map(\.version) == Array(4...PostgresMigrations.all.count))
                #expect(before?.split(separator: "|").count == 3)
                #expect(try await database.textValue(aggregate) == before)
                // "window" is a keyword in PostgreSQL: psql users quote the column SQLite users name bare.
                #expect(try await database.textValue(#"SELECT string_agg("window", ',' ORDER BY bucket) FROM quota_windows"#)
                    == "day America/Los_Angeles,day America/Los_Angeles")
                do {
                    try await keepsCounting(migrated, today: today)
                } catch {
                    await migrated.shutdown()
                    throw error
                }
                await migrated.shutdown()
            }
        }
    }

    /// After the migration the old buckets are Pacific-day buckets with their usage and their mark,
    /// and the next charge lands on the same rows.
    private func keepsCounting(_ store: some QuotaStorage, today: PacificDay) async throws {
        let windows = try await store.quotaWindows(at: Date())
        #expect(windows.map(\.bucket) == ["youtube", "youtube.search"])
        #expect(windows.map(\.window) == [.pacificDay, .pacificDay])
        #expect(windows.map(\.period) == [QuotaPeriod(today), QuotaPeriod(today)])
        #expect(windows.map(\.unitsUsed) == [103, 1])
        #expect(windows.map(\.isExhausted) == [false, true])
        let next = try #require(try await store.reserveQuota(QuotaReservationRequest(
            bucket: "youtube", endpoint: "videos.list", cost: 1, configuredLimit: 10_000, at: Date()
        )).charge)
        #expect(next.bucketUnitsUsed == 104)
        #expect(next.period == QuotaPeriod(today))
        #expect(try await store.quotaUsage(on: today).map(\.units) == [100, 4, 1])
        #expect(try await store.quotaUsage(on: today.previous).map(\.units) == [7])
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
    }
}

extension QuotaReservationOutcome {
    /// The charge, when the reservation was charged.
    var charge: QuotaCharge? {
        if case .reserved(let charge) = self { charge } else { nil }
    }

    /// The refusal, when the reservation was refused.
    var refusal: QuotaRefusal? {
        if case .refused(let refusal) = self { refusal } else { nil }
    }
}
