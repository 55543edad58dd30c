import Foundation
import HTTPTypes
import Synchronization
import Testing
import Tollgate
import TollgateTestSupport

@Suite("Freshness that follows the budget")
struct BudgetFreshnessTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    /// 2027-01-15 08:00 UTC: midnight, Pacific standard time.
    static let midnight = Date(timeIntervalSince1970: 1_800_000_000)
    static let bounds = ChosenFreshness(minimum: .seconds(60), maximum: .seconds(3600), followsBudget: true)

    private static func decide(
        _ freshness: ChosenFreshness = bounds, inForce: Duration = .seconds(60), perHour: Double, remaining: Int,
        hoursLeft: Double
    ) -> BudgetFreshness.Decision {
        BudgetFreshness.decide(freshness, inForce: inForce, unitsPerHour: perHour, remaining: remaining, now: now,
                               resetsAt: now.addingTimeInterval(hoursLeft * 3600))
    }

    @Test("while the bucket lasts until its reset at the current rate, the minimum")
    func lasts() {
        let decision = Self.decide(perHour: 100, remaining: 5_000, hoursLeft: 10)
        #expect(decision == .init(lifetime: .seconds(60), decidedAt: Self.now, reason: .budgetLasts))
        #expect(Self.decide(perHour: 0, remaining: 5_000, hoursLeft: 10).lifetime == .seconds(60))
    }

    @Test("when it would run out before the reset, stretched by the factor the spending exceeds what is left (with 10 % kept back)")
    func stretches() {
        // 1,000 an hour for 10 hours is 10,000 against 5,000 left (4,500 planned): ×2.22.
        let decision = Self.decide(perHour: 1_000, remaining: 5_000, hoursLeft: 10)
        #expect(decision.reason == .stretched)
        #expect(decision.lifetime == .milliseconds(133_334))
        // The spending measured under a longer lifetime stretches from it.
        #expect(Self.decide(inForce: .seconds(120), perHour: 1_000, remaining: 5_000, hoursLeft: 10).lifetime
            == .milliseconds(266_667))
    }

    @Test("when spending slows, it shrinks back toward the minimum by the same rule")
    func shrinks() {
        let decision = Self.decide(inForce: .seconds(600), perHour: 200, remaining: 4_500, hoursLeft: 10)
        #expect(decision.reason == .stretched)
        #expect(decision.lifetime == .milliseconds(296_297), "600 s × 2,000 / 4,050")
        #expect(Self.decide(inForce: .seconds(600), perHour: 10, remaining: 4_500, hoursLeft: 10).lifetime == .seconds(60))
    }

    @Test("never past the maximum; a spent bucket holds at the maximum; a fixed lifetime never moves")
    func bounded() {
        #expect(Self.decide(perHour: 1_000_000, remaining: 5_000, hoursLeft: 10)
            == .init(lifetime: .seconds(3600), decidedAt: Self.now, reason: .atMaximum))
        #expect(Self.decide(perHour: 10, remaining: 0, hoursLeft: 10).reason == .spent)
        #expect(Self.decide(perHour: 10, remaining: 0, hoursLeft: 10).lifetime == .seconds(3600))
        #expect(Self.decide(ChosenFreshness(.seconds(300)), perHour: 1_000_000, remaining: 1, hoursLeft: 10).lifetime
            == .seconds(300))
        #expect(Self.decide(perHour: 1_000, remaining: 5_000, hoursLeft: 0).lifetime == .seconds(60),
                "the window resets now: nothing to save for")
    }

    @Test("a decision stands for one interval, and a clock that went back makes it due")
    func interval() {
        let decision = BudgetFreshness.Decision(lifetime: .seconds(60), decidedAt: Self.now, reason: .budgetLasts)
        #expect(!decision.isDue(at: Self.now.addingTimeInterval(599)))
        #expect(decision.isDue(at: Self.now.addingTimeInterval(600)))
        #expect(decision.isDue(at: Self.now.addingTimeInterval(-1)))
    }

    @Test("the lifetime in force: a fixed one is itself; one that follows keeps its decision for an interval, then decides from it")
    func inForce() {
        let spending = BudgetFreshness.Spending(unitsPerHour: 1_000, remaining: 5_000, resetsAt: Self.now.addingTimeInterval(36_000))
        #expect(BudgetFreshness.inForce(ChosenFreshness(.seconds(300)), last: nil, spending: spending, now: Self.now)
            == .init(lifetime: .seconds(300), decidedAt: Self.now, reason: .fixed))
        let first = BudgetFreshness.inForce(Self.bounds, last: nil, spending: spending, now: Self.now)
        #expect(first == Self.decide(perHour: 1_000, remaining: 5_000, hoursLeft: 10), "the first decision starts from the minimum")
        let later = Self.now.addingTimeInterval(599)
        let idle = BudgetFreshness.Spending(unitsPerHour: 0, remaining: 5_000, resetsAt: spending.resetsAt)
        #expect(BudgetFreshness.inForce(Self.bounds, last: first, spending: idle, now: later) == first, "it stands")
        let due = Self.now.addingTimeInterval(600)
        let again = BudgetFreshness.inForce(Self.bounds, last: first, spending: spending, now: due)
        #expect(again == BudgetFreshness.decide(Self.bounds, inForce: first.lifetime, unitsPerHour: 1_000, remaining: 5_000,
                                                now: due, resetsAt: spending.resetsAt), "decided again from the lifetime in force")
        #expect(BudgetFreshness.inForce(Self.bounds, last: nil, spending: nil, now: Self.now)
            == .init(lifetime: .seconds(3600), decidedAt: Self.now, reason: .ledgerUnreadable))
        #expect(BudgetFreshness.inForce(Self.bounds, last: first, spending: nil, now: due) == first)
    }

    @Test("what the gate shows as in force is the lifetime it serves by; a process with no gate decides by the same rule from the ledger")
    func shownAsServed() async throws {
        let directory = try TemporaryDirectory()
        let clock = ManualClock(now: Self.midnight.addingTimeInterval(9 * 3600))
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: 100_000, per: .seconds(60)))
        configuration.quota.bucketLimits[QuotaConfiguration.youTubeBucket] = 300
        configuration.endpointFreshFor["videos.list"] = Self.bounds
        configuration.freshFor = ChosenFreshness(.seconds(120))
        let store = try SQLiteStore(path: directory.path("shown.sqlite"))
        let gate = try Gate(store: store, transport: YouTubeLikeOrigin(), configuration: configuration, clock: clock)
        // 20 URLs once a minute for 10 minutes: 200 of 300 units, far too fast for the 15 hours left.
        for _ in 0..<10 {
            for video in 0..<20 {
                let request = HTTPRequest(url: URL(string: "https://www.googleapis.com/youtube/v3/videos?id=v\(video)")!)
                _ = try await gate.send(request, endpoint: "videos.list")
            }
            clock.advance(by: .seconds(60))
        }
        try await gate.flush()
        let served = await gate.freshnessInForce(Self.bounds, endpoint: "videos.list")
        #expect(served.reason == .atMaximum || served.reason == .stretched, "\(served)")
        let rows = await gate.freshnessInForce()
        #expect(rows.map(\.endpoint) == ["*", "videos.list"])
        let row = try #require(rows.last)
        #expect(row.lifetimeSeconds == served.lifetime.timeInterval)
        #expect(row.reason == served.reason && row.decidedBy == .gate && row.decidedAt == served.decidedAt)
        #expect(row.bucket == "youtube" && row.followsBudget)
        #expect(row.why == "follows youtube: \(served.reason.description)")
        #expect(rows.first?.lifetimeSeconds == 120 && rows.first?.reason == .fixed && rows.first?.decidedBy == .description)

        // Another process over the same file, without the gate's memory: the same rule, from the minimum.
        let ledger = try QuotaLedger(storage: store, configuration: configuration.quota, clock: clock)
        let fromLedger = await ledger.freshnessInForce(endpoints: configuration.endpointFreshFor, defaults: nil)
        let spending = try #require(try await ledger.forecast(over: BudgetFreshness.interval).first { $0.bucket == "youtube" })
        let expected = BudgetFreshness.inForce(Self.bounds, last: nil, spending: BudgetFreshness.Spending(
            unitsPerHour: spending.unitsPerHour, remaining: spending.remaining, resetsAt: spending.resetsAt), now: clock.now())
        #expect(fromLedger.map(\.endpoint) == ["videos.list"])
        #expect(fromLedger.first?.lifetimeSeconds == expected.lifetime.timeInterval && fromLedger.first?.decidedBy == .ledger)
    }

    /// An origin in the process that answers like YouTube: `private, max-age=0, must-revalidate`,
    /// with an ETag, and a 304 for it.
    final class YouTubeLikeOrigin: HTTPTransport {
        let sent = Atomic<Int>(0)

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            sent.add(1, ordering: .relaxed)
            var fields = HTTPFields()
            fields[.eTag] = "\"1\""
            fields[.cacheControl] = "private, max-age=0, must-revalidate"
            if request.headerFields[.ifNoneMatch] == "\"1\"" {
                return (HTTPResponse(status: .notModified, headerFields: fields), Data())
            }
            fields[.contentType] = "application/json"
            return (HTTPResponse(status: .ok, headerFields: fields), Data(#"{"items":[]}"#.utf8))
        }
    }

    /// A day of 11 videos.list URLs, each asked once a minute from midnight Pacific: at 1 unit a
    /// revalidation, 660 units an hour spend 10,000 units by about 15:00.
    private struct Day {
        var served = 0
        var fresh = 0
        var runOutAt: Date?
        var lifetimes: [(Date, Duration)] = []
        var remainingAtMidnight = 0
    }

    private static func simulate(_ freshness: ChosenFreshness) async throws -> Day {
        let directory = try TemporaryDirectory()
        let clock = ManualClock(now: Self.midnight)
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: 100_000, per: .seconds(60)))
        configuration.endpointFreshFor["videos.list"] = freshness
        configuration.cache.coalescesRequests = false
        let gate = try Gate(store: SQLiteStore(path: directory.path("day.sqlite")), transport: YouTubeLikeOrigin(),
                            configuration: configuration, clock: clock)
        var day = Day()
        for _ in 0..<(24 * 60) {
            for video in 0..<11 {
                let request = HTTPRequest(url: URL(string: "https://www.googleapis.com/youtube/v3/videos?id=v\(video)&part=snippet")!)
                do {
                    let answer = try await gate.send(request, endpoint: "videos.list",
                                                     options: GateRequestOptions(allowsStale: false))
                    day.served += 1
                    if answer.source == .fresh { day.fresh += 1 }
                } catch TollgateError.quotaExceeded {
                    if day.runOutAt == nil { day.runOutAt = clock.now() }
                }
            }
            let inForce = await gate.freshnessInForce(freshness, endpoint: "videos.list").lifetime
            if freshness.followsBudget, day.lifetimes.last?.1 != inForce { day.lifetimes.append((clock.now(), inForce)) }
            if day.runOutAt != nil, !freshness.followsBudget { break }
            clock.advance(by: .seconds(60))
        }
        try await gate.flush()
        // The clock is at the next midnight now: what the day that ended left.
        let used = try await gate.quota.usage(on: PacificDay(containing: Self.midnight))
            .filter { $0.bucket == QuotaConfiguration.youTubeBucket }.map(\.units).reduce(0, +)
        day.remainingAtMidnight = 10_000 - used
        return day
    }

    private static func pacific(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "America/Los_Angeles")!
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d PT", parts.hour ?? 0, parts.minute ?? 0)
    }

    @Test("a workload that spends 10,000 units by about 15:00 PT at 1 minute reaches midnight with units left when the freshness follows the budget")
    func dayWithFollowBudget() async throws {
        // The two days are independent (a store and a clock each): simulated side by side.
        async let fixedDay = Self.simulate(ChosenFreshness(.seconds(60)))
        async let followingDay = Self.simulate(Self.bounds)
        let fixed = try await fixedDay
        let runOut = try #require(fixed.runOutAt, "at a fixed minute the day's units run out")
        print("fresh_for 1m: the 10,000 units run out at \(Self.pacific(runOut))")
        #expect((14.5 * 3600...15.5 * 3600).contains(runOut.timeIntervalSince(Self.midnight)), "about 15:00 PT")

        let following = try await followingDay
        let seconds = following.lifetimes.map { $0.1.components.seconds }
        print("fresh_for {min: 1m, max: 1h, follow_budget: true}: \(seconds.count) lifetimes chosen, "
              + "from \(seconds.min() ?? 0) s to \(seconds.max() ?? 0) s; the first hours: "
              + following.lifetimes.prefix(13).map { "\(Self.pacific($0.0)) \($0.1.components.seconds) s" }.joined(separator: ", "))
        let share = Double(following.fresh) / Double(max(following.served, 1))
        print("served \(following.served) answers, \(following.fresh) of them without asking (\(String(format: "%.1f", share * 100)) % stale by the server's max-age=0); \(following.remainingAtMidnight) units left at midnight")
        #expect(following.runOutAt == nil, "the units last the day")
        #expect(following.remainingAtMidnight > 0)
        #expect(following.served == 24 * 60 * 11)
        #expect(following.lifetimes.contains { $0.1 > .seconds(60) }, "the lifetime stretched")
        #expect(following.lifetimes.allSatisfy { $0.1 >= .seconds(60) && $0.1 <= .seconds(3600) })
    }
}
