import Foundation
import Testing
import Tollgate
import TollgateTestSupport

/// The wall clock jumps back an hour (a wrong clock corrected, a VM restored) or forward a day (a
/// laptop waking up): no endpoint is locked longer than its configured duration, and the quota
/// follows the Pacific day of the clock's new time.
@Suite("Hostile input: a wall clock that jumps")
struct ClockJumpTests {
    static let start = utc("2027-03-10T18:00:00Z")

    @Test("a circuit opened before the clock jumps back an hour opens again after its open duration, not an hour later",
          arguments: [false, true])
    func circuitAfterJumpBack(rateLimited: Bool) async throws {
        let store = try SQLiteStore(location: .inMemory)
        let clock = ManualClock(now: Self.start)
        let breaker = CircuitBreaker(storage: store, clock: clock)
        let policy = CircuitPolicy()
        let openFor = rateLimited ? policy.rateLimitOpenDuration : policy.openDuration
        for _ in 0..<policy.failureThreshold {
            try await breaker.recordResult(endpoint: "videos.list", outcome: rateLimited ? .rateLimited : .failure)
        }
        #expect(try await breaker.state(for: "videos.list") == .open)

        clock.advance(by: .seconds(-3600))
        let remaining = try #require(try await breaker.timeRemaining(for: "videos.list"))
        #expect(remaining <= openFor.timeInterval)
        let refused = try await breaker.shouldAllowRequest(endpoint: "videos.list")
        #expect(!refused.isAllowed)
        #expect((refused.retryAfter ?? .infinity) <= openFor.timeInterval)

        clock.advance(by: openFor + .seconds(1))
        let decision = try await breaker.shouldAllowRequest(endpoint: "videos.list")
        #expect(decision.isAllowed, "still locked \(openFor) after the jump back")
    }

    @Test("a circuit opened before the clock jumps forward a day lets a probe through at once")
    func circuitAfterJumpForward() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let clock = ManualClock(now: Self.start)
        let breaker = CircuitBreaker(storage: store, clock: clock)
        for _ in 0..<5 { try await breaker.recordResult(endpoint: "videos.list", outcome: .rateLimited) }
        clock.advance(by: .seconds(86_400))
        #expect(try await breaker.shouldAllowRequest(endpoint: "videos.list").isAllowed)
    }

    @Test("a full throttle window before the clock jumps back an hour has room again one window later")
    func throttleAfterJumpBack() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let clock = ManualClock(now: Self.start)
        let window = Duration.seconds(60)
        let throttle = try RequestThrottler(
            storage: store, configuration: ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: 3, per: window)),
            clock: clock
        )
        for _ in 0..<3 { #expect(try await throttle.shouldAllowRequest(endpoint: "videos.list").allowed) }
        clock.advance(by: .seconds(-3600))
        let refused = try await throttle.shouldAllowRequest(endpoint: "videos.list")
        #expect(!refused.allowed)
        #expect((refused.retryAfter ?? .infinity) <= window.timeInterval)
        clock.advance(by: window + .seconds(1))
        #expect(try await throttle.shouldAllowRequest(endpoint: "videos.list").allowed)
    }

    @Test("the quota moves to the Pacific day of the clock: forward a day charges tomorrow, back an hour across midnight charges yesterday")
    func quotaFollowsThePacificDay() async throws {
        let store = try SQLiteStore(location: .inMemory)
        // 23:30 Pacific (PST, UTC-8) on 2027-03-09.
        let clock = ManualClock(now: utc("2027-03-10T07:30:00Z"))
        var configuration = QuotaConfiguration.youTubeDataAPIv3
        configuration.bucketLimits[QuotaConfiguration.youTubeBucket] = 100
        let ledger = try QuotaLedger(storage: store, configuration: configuration, clock: clock)
        let first = try await ledger.reserve(endpoint: "videos.list", cost: 60)
        #expect(first.day.key == "2027-03-09")

        clock.advance(by: .seconds(86_400))  // 23:30 on 2027-03-10: a fresh budget
        let second = try await ledger.reserve(endpoint: "videos.list", cost: 60)
        #expect(second.day.key == "2027-03-10")

        clock.advance(by: .seconds(3600))  // 00:30 on 2027-03-11
        let third = try await ledger.reserve(endpoint: "videos.list", cost: 30)
        #expect(third.day.key == "2027-03-11")

        clock.advance(by: .seconds(-3600))  // back to 23:30 on 2027-03-10: that day's budget again
        await #expect(throws: TollgateError.self) { try await ledger.reserve(endpoint: "videos.list", cost: 60) }
        let fourth = try await ledger.reserve(endpoint: "videos.list", cost: 40)
        #expect(fourth.day.key == "2027-03-10")
        #expect(fourth.remaining == 0)

        for (key, units) in [("2027-03-09", 60), ("2027-03-10", 100), ("2027-03-11", 30)] {
            let usage = try await ledger.usage(on: PacificDay(key: key)!)
            #expect(usage.map(\.units).reduce(0, +) == units, "\(key)")
        }
        #expect(try await ledger.discrepancies().isEmpty)
    }
}
