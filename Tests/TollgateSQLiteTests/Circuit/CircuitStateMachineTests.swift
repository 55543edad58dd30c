import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
import TollgateSQLite

/// The circuit's rules on their own, without a database.
@Suite("Circuit state machine")
struct CircuitStateMachineTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let policy = CircuitPolicy()

    func machine(_ policy: CircuitPolicy? = nil) -> CircuitStateMachine {
        CircuitStateMachine(record: nil, endpoint: "/api/activities", policy: policy ?? self.policy, now: start)
    }

    func fail(_ machine: inout CircuitStateMachine, _ count: Int, _ outcome: CircuitOutcome = .failure, at: Date? = nil)
        -> [CircuitTransition] {
        (0..<count).flatMap { _ in machine.record(outcome, probeToken: nil, now: at ?? start).transitions }
    }

    @Test("a fresh circuit is closed, allows requests and needs no write")
    func freshIsClosed() {
        var circuit = machine()
        #expect(circuit.admit(probeToken: "a", now: start).decision == .allowed)
        #expect(circuit.record.state == .closed)
        #expect(!circuit.hasChanges)
        _ = circuit.record(.success, probeToken: nil, now: start)
        #expect(!circuit.hasChanges)
    }

    @Test("4 failures keep it closed, the 5th opens it for 60 s, and a success in closed resets the count")
    func thresholdOpens() throws {
        var circuit = machine()
        #expect(fail(&circuit, 4).isEmpty)
        #expect(circuit.record.state == .closed && circuit.record.consecutiveFailures == 4)
        _ = circuit.record(.success, probeToken: nil, now: start)
        #expect(circuit.record.consecutiveFailures == 0)

        #expect(fail(&circuit, 4).isEmpty)
        let transitions = fail(&circuit, 1)
        let transition = try #require(transitions.first)
        #expect(transition.from == .closed && transition.to == .open)
        #expect(transition.cause == .thresholdReached(failures: 5, threshold: 5, rateLimited: false))
        #expect(transition.reason == "threshold reached (5/5 consecutive failures); open for 60 s")
        #expect(circuit.record.openUntil == start.addingTimeInterval(60))
        #expect(circuit.record.trips == 1)
    }

    @Test("5 rate limits in a row open it for 1 hour; a trip with any other failure in the streak opens for 60 s")
    func rateLimitTrip() {
        var limited = machine()
        _ = fail(&limited, 5, .rateLimited)
        #expect(limited.record.openDuration == .seconds(3600))
        #expect(limited.record.openUntil == start.addingTimeInterval(3600))

        var mixed = machine()
        _ = fail(&mixed, 2, .rateLimited)
        _ = fail(&mixed, 1, .failure)
        _ = fail(&mixed, 2, .rateLimited)
        #expect(mixed.record.state == .open)
        #expect(mixed.record.openDuration == .seconds(60))
    }

    @Test("neutral outcomes (a 404) neither count nor reset")
    func neutralDoesNotCount() {
        var circuit = machine()
        _ = fail(&circuit, 3)
        for _ in 0..<10 { _ = circuit.record(.neutral, probeToken: nil, now: start) }
        #expect(circuit.record.consecutiveFailures == 3)
        #expect(circuit.record.state == .closed)
    }

    @Test("open refuses with the time left; after it, the first caller gets the probe and the next is refused")
    func openThenHalfOpen() throws {
        var circuit = machine()
        _ = fail(&circuit, 5)
        let refused = circuit.admit(probeToken: "a", now: start.addingTimeInterval(15))
        #expect(refused.decision == .refused(retryAfter: 45, state: .open))
        #expect(refused.transitions.isEmpty)

        let later = start.addingTimeInterval(60)
        let first = circuit.admit(probeToken: "a", now: later)
        #expect(first.decision == .probe(CircuitProbe(token: "a", leaseUntil: later.addingTimeInterval(30))))
        #expect(first.transitions.map(\.cause) == [.openDurationElapsed])
        #expect(circuit.record.state == .halfOpen)
        let second = circuit.admit(probeToken: "b", now: later.addingTimeInterval(1))
        #expect(second.decision == .refused(retryAfter: 29, state: .halfOpen))
        #expect(second.transitions.isEmpty)
    }

    @Test("an expired probe lease lets the next caller probe, and the first probe's late result is ignored")
    func leaseExpires() {
        var circuit = machine()
        _ = fail(&circuit, 5)
        let halfOpen = start.addingTimeInterval(60)
        #expect(circuit.admit(probeToken: "dead", now: halfOpen).decision.probe != nil)
        let afterLease = halfOpen.addingTimeInterval(30)
        #expect(circuit.admit(probeToken: "next", now: afterLease).decision.probe?.token == "next")
        #expect(circuit.record.probeOwner == "next")

        let late = circuit.record(.success, probeToken: "dead", now: afterLease)
        #expect(!late.applied)
        #expect(circuit.record.state == .halfOpen)
        let real = circuit.record(.success, probeToken: "next", now: afterLease)
        #expect(real.transitions.map(\.cause) == [.probeSucceeded])
    }

    @Test("a successful probe closes and resets every counter; a failed one reopens for the open duration")
    func probeOutcomes() {
        var recovering = machine()
        _ = fail(&recovering, 5)
        let probeTime = start.addingTimeInterval(61)
        let token = recovering.admit(probeToken: "p", now: probeTime).decision.probe?.token
        let closed = recovering.record(.success, probeToken: token, now: probeTime)
        #expect(closed.transitions.map(\.to) == [.closed])
        #expect(recovering.record.consecutiveFailures == 0 && recovering.record.failedProbes == 0)
        #expect(recovering.record.openUntil == nil && recovering.record.probeOwner == nil)
        #expect(recovering.record.trips == 1)

        var failing = machine()
        _ = fail(&failing, 5)
        _ = failing.admit(probeToken: "p", now: probeTime)
        let reopened = failing.record(.failure, probeToken: "p", now: probeTime)
        #expect(reopened.transitions.map(\.cause) == [.probeFailed(rateLimited: false)])
        #expect(failing.record.state == .open)
        #expect(failing.record.openUntil == probeTime.addingTimeInterval(60))
        #expect(failing.record.failedProbes == 1 && failing.record.trips == 2)
    }

    @Test("a neutral probe releases the lease so another caller can probe at once")
    func neutralProbeReleasesLease() {
        var circuit = machine()
        _ = fail(&circuit, 5)
        let now = start.addingTimeInterval(60)
        _ = circuit.admit(probeToken: "p", now: now)
        _ = circuit.record(.neutral, probeToken: "p", now: now)
        #expect(circuit.record.state == .halfOpen && circuit.record.probeOwner == nil)
        #expect(circuit.admit(probeToken: "q", now: now).decision.probe?.token == "q")
    }

    @Test("with growth, each failed probe multiplies the open duration, up to the cap")
    func growthIsCapped() {
        var circuit = machine(CircuitPolicy(openDurationGrowth: .init(multiplier: 2, maximum: .seconds(300))))
        _ = fail(&circuit, 5)
        var now = start
        var durations: [Duration] = []
        for _ in 0..<5 {
            now = now.addingTimeInterval(circuit.record.openDuration!.timeInterval)
            _ = circuit.admit(probeToken: "p", now: now)
            _ = circuit.record(.failure, probeToken: "p", now: now)
            durations.append(circuit.record.openDuration!)
        }
        #expect(durations == [.seconds(120), .seconds(240), .seconds(300), .seconds(300), .seconds(300)])
        #expect(circuit.record.failedProbes == 5)
    }

    @Test("a wall clock set back an hour still leaves at most 60 s, and the circuit probes 60 s later")
    func backwardClockJump() {
        var circuit = machine()
        _ = fail(&circuit, 5)
        let setBack = start.addingTimeInterval(-3600)
        #expect(circuit.record.remainingOpenTime(at: setBack) == 60)
        let refused = circuit.admit(probeToken: "p", now: setBack)
        #expect(refused.decision == .refused(retryAfter: 60, state: .open))
        #expect(circuit.hasChanges)  // the window was moved to the new time line
        #expect(circuit.admit(probeToken: "p", now: setBack.addingTimeInterval(60)).decision.probe != nil)
    }

    @Test("outcomes that arrive while open are ignored; force-open and reset work from any state")
    func administration() throws {
        var circuit = machine()
        _ = fail(&circuit, 5)
        #expect(!circuit.record(.success, probeToken: nil, now: start).applied)
        #expect(!circuit.record(.failure, probeToken: nil, now: start).applied)
        #expect(circuit.record.state == .open && circuit.record.consecutiveFailures == 5)

        let resetTransition = circuit.reset(now: start)
        let reset = try #require(resetTransition)
        #expect(reset.from == .open && reset.to == .closed && reset.reason == "reset")
        #expect(circuit.record.consecutiveFailures == 0 && circuit.record.trips == 1)
        #expect(circuit.reset(now: start) == nil)

        let forced = circuit.forceOpen(for: .seconds(300), now: start)
        #expect(forced.reason == "forced open; open for 300 s")
        #expect(circuit.record.remainingOpenTime(at: start.addingTimeInterval(100)) == 200)
        #expect(circuit.record.trips == 1)
    }

    @Test("invalid policies are refused with the value named")
    func invalidPolicy() {
        #expect(throws: StoreRefusal.invalidArgument("circuit failure threshold must be at least 1, got 0")) {
            try CircuitPolicy(failureThreshold: 0).validate()
        }
        #expect(throws: StoreRefusal.self) { try CircuitPolicy(openDuration: .zero).validate() }
        #expect(throws: StoreRefusal.self) {
            try CircuitPolicy(openDurationGrowth: .init(multiplier: 0.5)).validate()
        }
    }
}
