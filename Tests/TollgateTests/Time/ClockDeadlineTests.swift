import Foundation
import Testing
@testable import Tollgate

/// `sleep(until:)`: a wait whose end others' time decides, on each clock; and the coalescing
/// waiter that waits that way.
@Suite("Waiting until a deadline without moving the clock")
struct ClockDeadlineTests {
    /// Whether `condition` holds within 10 s of real time, looked at every millisecond: for a task
    /// to reach its wait (a check that fails ends the test rather than hang it).
    static func soon(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    @Test("a manual clock holds the wait until advanced to the deadline, and does not count it as a sleep")
    func manualClock() async throws {
        let clock = ManualClock()
        let deadline = clock.now().addingTimeInterval(5)
        let waiting = Task { try await clock.sleep(until: deadline) }
        try #require(await Self.soon { clock.sleeperCount == 1 })
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        try await waiting.value
        #expect(clock.sleeperCount == 0)
        #expect(clock.sleeps.isEmpty)
        // A deadline passed already: no wait at all.
        try await clock.sleep(until: deadline)
        #expect(clock.sleeperCount == 0)
    }

    @Test("a simulated clock does not jump to the deadline: the wait ends when other sleeps have moved the time past it")
    func simulatedClock() async throws {
        let clock = SimulatedClock()
        let start = clock.now()
        let waiting = Task { try await clock.sleep(until: start.addingTimeInterval(5)) }
        try #require(await Self.soon { clock.base.sleeperCount == 1 })
        #expect(clock.now() == start, "waiting moved no time")
        try await clock.sleep(for: .seconds(4))
        #expect(clock.base.sleeperCount == 1, "4 s of 5 passed: still waiting")
        try await clock.sleep(for: .seconds(1))
        try await waiting.value
        #expect(clock.sleeps == [.seconds(4), .seconds(1)], "the wait is not one of the sleeps")
    }

    @Test("a cancelled deadline wait throws CancellationError")
    func cancelled() async throws {
        let clock = ManualClock()
        let waiting = Task { try await clock.sleep(until: clock.now().addingTimeInterval(60)) }
        try #require(await Self.soon { clock.sleeperCount == 1 })
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test("the system clock sleeps until the deadline, not less")
    func systemClock() async throws {
        let clock = SystemClock()
        try await clock.sleep(until: Date().addingTimeInterval(-60))
        let deadline = Date().addingTimeInterval(0.02)
        try await clock.sleep(until: deadline)
        #expect(Date() >= deadline)
    }

    @Test("a coalescing waiter on a simulated clock waits for the leader, not at once; it gives up when the leader's own waits pass its patience")
    func coalescingWaiterOnSimulatedTime() async throws {
        let clock = SimulatedClock()
        let coalescer = RequestCoalescer()
        let (flight, leads) = coalescer.join("k", at: clock.now())
        #expect(leads)
        let deadline = clock.now().addingTimeInterval(5)
        let patient = Task { await flight.wait(until: deadline, on: clock) }
        try #require(await Self.soon { clock.base.sleeperCount == 1 })
        // The leader backs off 1 s and 2 s: the waiter still waits.
        try await clock.sleep(for: .seconds(1))
        try await clock.sleep(for: .seconds(2))
        #expect(clock.base.sleeperCount == 1)
        coalescer.finish("k", flight)
        #expect(await patient.value, "the leader finished first")

        let (second, _) = coalescer.join("k", at: clock.now())
        let impatient = Task { await second.wait(until: clock.now().addingTimeInterval(5), on: clock) }
        try #require(await Self.soon { clock.base.sleeperCount == 1 })
        // The leader's backoffs of 4 s then 4 s pass the waiter's 5 s.
        try await clock.sleep(for: .seconds(4))
        try await clock.sleep(for: .seconds(4))
        #expect(await impatient.value == false, "the waiter gave up before the leader finished")
        coalescer.finish("k", second)
    }
}
