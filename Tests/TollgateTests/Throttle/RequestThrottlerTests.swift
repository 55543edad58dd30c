import Foundation
import Testing
import TollgateTestSupport
import Tollgate

/// A throttle over a fresh file with its own clock and captured log.
private struct Fixture {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let clock: ManualClock
    let log = LogCapture()
    let throttler: RequestThrottler

    init(configuration: ThrottleConfiguration = .tieredBackend, now: Date = utc("2026-11-21T18:00:00Z")) throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("throttle.sqlite"))
        clock = ManualClock(now: now)
        throttler = try RequestThrottler(storage: store, configuration: configuration, clock: clock, logger: log.logger)
    }

    /// A throttle on the same file through a store of its own, as a restarted process would open it.
    func reopened() throws -> RequestThrottler {
        try RequestThrottler(
            storage: try SQLiteStore(path: directory.path("throttle.sqlite")),
            configuration: throttler.configuration, clock: clock, logger: log.logger
        )
    }

    func storedRequests() async throws -> Int {
        try await store.read { db in
            try db.fetchValue(sql: "SELECT COALESCE(SUM(json_array_length(admitted_at_ms)), 0) FROM throttle_limits").int ?? -1
        }
    }
}

@Suite("Request throttle")
struct RequestThrottlerTests {
    @Test("the 11th /api/activities request within 30 s is refused; retryAfter counts down to the oldest request's expiry")
    func eleventhRequestIn30Seconds() async throws {
        let fixture = try Fixture()
        for index in 0..<10 {
            let (allowed, retryAfter) = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities")
            #expect(allowed, "request \(index + 1)")
            #expect(retryAfter == nil)
            fixture.clock.advance(by: .seconds(3))
        }
        // t = 30 s: ten requests made at 0, 3, …, 27 s. The oldest leaves the window at 60 s.
        var answer = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities")
        #expect(answer.allowed == false)
        #expect(answer.retryAfter == 30)
        fixture.clock.advance(by: .seconds(12))
        answer = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities")
        #expect(answer.allowed == false)
        #expect(answer.retryAfter == 18)
        #expect(try await fixture.throttler.window(for: "/api/activities").retryAfter == 18)
        #expect(try await fixture.throttler.currentCount(for: "/api/activities") == 10)

        fixture.clock.advance(by: .seconds(17.5))
        #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities").retryAfter == 0.5)
        fixture.clock.advance(by: .seconds(0.5))
        #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities").allowed)
        // t = 60 s: the request of 3 s is now the oldest; it leaves at 63 s.
        #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities") == (false, 3))

        #expect(fixture.log.messages(at: .debug).contains("Allowing /api/activities - 5/10 requests in window"))
        // Per-request events are debug: an app that bootstraps no logging sees none of them.
        #expect(fixture.log.messages(at: .debug).contains("Throttling /api/activities - 10/10 requests in window"))
        #expect(fixture.log.messages(at: .debug).contains("Retry after: 30s"))
        #expect(fixture.log.messages(at: .info).isEmpty)
    }

    @Test("each endpoint has its own window and limit: /api/streams 20, others 30")
    func endpointsAreIsolated() async throws {
        let fixture = try Fixture()
        for _ in 0..<10 { #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities").allowed) }
        #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities").allowed == false)

        for _ in 0..<20 { #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/streams").allowed) }
        #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/streams").allowed == false)
        for _ in 0..<30 { #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/athlete").allowed) }
        #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/athlete").allowed == false)

        #expect(try await fixture.throttler.currentCount(for: "/api/activities") == 10)
        #expect(try await fixture.throttler.remainingRequests(for: "/api/activities") == 0)
        #expect(try await fixture.throttler.remainingRequests(for: "/api/other") == 30)
        #expect(try await fixture.throttler.currentCount(for: "/api/other") == 0)
    }

    @Test("a reopened store keeps the window: a restarted process cannot bypass the throttle")
    func reopenedStoreKeepsWindow() async throws {
        let fixture = try Fixture()
        for _ in 0..<10 { _ = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities") }
        let restarted = try fixture.reopened()
        #expect(try await restarted.currentCount(for: "/api/activities") == 10)
        #expect(try await restarted.shouldAllowRequest(endpoint: "/api/activities") == (false, 60))
    }

    @Test("100 concurrent tasks on two stores sharing one file admit exactly the limit")
    func concurrentTasksAdmitExactlyTheLimit() async throws {
        let fixture = try Fixture()
        let other = try fixture.reopened()
        let throttlers = [fixture.throttler, other]
        let allowed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<100 {
                group.addTask { try await throttlers[index % 2].shouldAllowRequest(endpoint: "/api/streams").allowed }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(allowed == 20)
        #expect(try await fixture.storedRequests() == 20)
    }

    @Test("four processes asking at once admit exactly the limit")
    func processesAdmitExactlyTheLimit() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("shared.sqlite")
        let nowMs = String(Int64(utc("2026-11-21T18:00:00Z").timeIntervalSince1970 * 1000))
        let results = try await WorkerProcess.runConcurrently("throttle-admit", count: 4) { _ in [path, nowMs, "25", "20"] }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let allowed = results.compactMap { Int($0.stdout.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") }
        #expect(allowed.count == 4)
        #expect(allowed.reduce(0, +) == 25)
    }

    @Test("a wall clock set back an hour holds the endpoint for one window at most, not for the hour")
    func clockSetBack() async throws {
        let fixture = try Fixture()
        for _ in 0..<10 { _ = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities") }
        fixture.clock.advance(by: .seconds(-3600))
        #expect(try await fixture.throttler.window(for: "/api/activities").retryAfter == 60)
        #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities") == (false, 60))
        fixture.clock.advance(by: .seconds(60))
        #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities").allowed)
        #expect(try await fixture.storedRequests() == 1)
    }

    @Test("waitUntilAllowed sleeps on the clock until the window has room, or refuses at once past its maximum")
    func waitUntilAllowed() async throws {
        let fixture = try Fixture()
        for _ in 0..<10 { _ = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities") }
        fixture.clock.advance(by: .seconds(15))

        await #expect(throws: TollgateError.throttled(retryAfter: 45)) {
            try await fixture.throttler.waitUntilAllowed(endpoint: "/api/activities", maximumWait: .seconds(44))
        }
        #expect(fixture.clock.sleeps.isEmpty)

        let throttler = fixture.throttler
        let waiter = Task { try await throttler.waitUntilAllowed(endpoint: "/api/activities", maximumWait: .seconds(60)) }
        while fixture.clock.sleeperCount == 0 { await Task.yield() }
        #expect(fixture.clock.sleeps == [.seconds(45)])
        fixture.clock.advance(by: .seconds(45))
        #expect(try await waiter.value == .seconds(45))
        // At 60 s the ten requests of 0 s left the window; the waiter's is the only one in it.
        #expect(try await throttler.currentCount(for: "/api/activities") == 1)
    }

    @Test("reset forgets one endpoint's requests, or all, and records it in admin_events")
    func reset() async throws {
        let fixture = try Fixture()
        for _ in 0..<10 { _ = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities") }
        for _ in 0..<5 { _ = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/streams") }
        try await fixture.throttler.reset(endpoint: "/api/activities")
        #expect(try await fixture.throttler.currentCount(for: "/api/activities") == 0)
        #expect(try await fixture.throttler.currentCount(for: "/api/streams") == 5)
        #expect(try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities").allowed)
        try await fixture.throttler.reset()
        #expect(try await fixture.storedRequests() == 0)
        let events = try await fixture.store.read { db in
            try db.fetchAll(sql: "SELECT subject, target, action, detail FROM admin_events ORDER BY id")
        }
        #expect(events == [
            Row(["throttle", "/api/activities", "reset", "forgot 10 recorded requests"]),
            Row(["throttle", nil, "reset", "forgot 6 recorded requests"]),
        ])
    }

    @Test("old requests are pruned: an endpoint keeps at most its limit's worth of rows")
    func pruning() async throws {
        let fixture = try Fixture()
        for _ in 0..<200 {
            _ = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities")
            fixture.clock.advance(by: .seconds(2))
        }
        #expect(try await fixture.storedRequests() <= 10)
        #expect(try await fixture.storedRequests() > 0)
    }

    @Test("the limits in force and the window's count show in the throttle_status view")
    func throttleStatusView() async throws {
        // The view reads SQLite's own clock, so this test's clock is the real time, not moved.
        let fixture = try Fixture(now: Date())
        for _ in 0..<3 { _ = try await fixture.throttler.shouldAllowRequest(endpoint: "/api/activities") }
        let rows = try await fixture.store.read { db in
            try db.fetchAll(sql: "SELECT endpoint, window_seconds, request_limit, current_count, remaining FROM throttle_status")
        }
        #expect(rows == [Row(["/api/activities", 60.0, 10, 3, 7])])
    }

    @Test("an invalid limit is refused with a typed error")
    func invalidConfiguration() throws {
        let store = try SQLiteStore(location: .inMemory)
        let bad = ThrottleLimit(requests: -1, per: .seconds(60))
        #expect(throws: ThrottleConfigurationError.invalidLimit(endpoint: "/x", limit: bad)) {
            try RequestThrottler(storage: store, configuration: ThrottleConfiguration(endpointLimits: ["/x": bad]))
        }
        #expect(throws: ThrottleConfigurationError.self) {
            try RequestThrottler(storage: store, configuration: ThrottleConfiguration(defaultLimit: .init(requests: 1, per: .zero)))
        }
    }
}
