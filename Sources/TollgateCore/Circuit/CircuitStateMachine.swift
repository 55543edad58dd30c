import Foundation

/// The circuit breaker's rules, free of any I/O: a value that a store loads from its row, moves
/// with one event, and writes back when ``hasChanges`` says so.
///
/// Keeping the rules here lets every backend (SQLite today, PostgreSQL later) apply exactly the same
/// transitions inside its own transaction, and lets the rules be tested without a database.
///
/// ```swift
/// var machine = CircuitStateMachine(record: row, endpoint: "/videos", policy: policy, now: now)
/// let admission = machine.admit(probeToken: token, now: now)
/// if machine.hasChanges { save(machine.record); append(admission.transitions) }
/// ```
public struct CircuitStateMachine: Sendable {
    /// The circuit after the events applied so far.
    public private(set) var record: CircuitRecord
    /// The rules applied.
    public let policy: CircuitPolicy
    /// Whether ``record`` differs from what was loaded, so it must be written.
    public private(set) var hasChanges: Bool

    /// Starts from a loaded row, or from a fresh closed circuit when there is none.
    /// - Parameters:
    ///   - record: The stored row, or nil when the endpoint has none yet.
    ///   - endpoint: The endpoint, used when `record` is nil.
    ///   - policy: The endpoint's policy.
    ///   - now: The current time, used as the update time of a fresh record.
    public init(record: CircuitRecord?, endpoint: String, policy: CircuitPolicy, now: Date) {
        self.record = record ?? CircuitRecord(endpoint: endpoint, failureThreshold: policy.failureThreshold, updatedAt: now)
        self.policy = policy
        self.hasChanges = false
    }

    // MARK: Admission

    /// Decides whether a request may be sent now.
    ///
    /// Closed: allowed. Open: refused with the time left, unless the open duration has passed, in
    /// which case the circuit moves to half-open and this caller gets the probe. Half-open: the
    /// caller gets the probe unless another holder's lease is still running.
    /// - Parameters:
    ///   - probeToken: The token stored as probe owner if this caller gets the probe.
    ///   - now: The current time.
    /// - Returns: The decision and the transitions it caused.
    public mutating func admit(probeToken: String, now: Date) -> CircuitAdmission {
        var transitions: [CircuitTransition] = []
        if record.state == .open {
            clampOpenWindow(now: now)
            if let remaining = record.remainingOpenTime(at: now) {
                return CircuitAdmission(decision: .refused(retryAfter: remaining, state: .open),
                                        transitions: [], record: record)
            }
            transitions.append(move(to: .halfOpen, cause: .openDurationElapsed, now: now))
            record.probeOwner = nil
            record.probeLeaseUntil = nil
        }
        guard record.state == .halfOpen else {
            return CircuitAdmission(decision: .allowed, transitions: transitions, record: record)
        }
        clampProbeLease(now: now)
        if record.probeOwner != nil, let leaseUntil = record.probeLeaseUntil, leaseUntil > now {
            return CircuitAdmission(
                decision: .refused(retryAfter: leaseUntil.timeIntervalSince(now), state: .halfOpen),
                transitions: transitions, record: record
            )
        }
        let leaseUntil = now.addingTimeInterval(policy.probeLeaseDuration.timeInterval)
        record.probeOwner = probeToken
        record.probeLeaseUntil = leaseUntil
        touch(now)
        return CircuitAdmission(decision: .probe(CircuitProbe(token: probeToken, leaseUntil: leaseUntil)),
                                transitions: transitions, record: record)
    }

    // MARK: Outcomes

    /// Applies the outcome of a request.
    ///
    /// Closed: a success resets the failure count, a failure or rate limit adds one and opens the
    /// circuit at the threshold, a neutral outcome changes nothing. Half-open: a success closes the
    /// circuit, a failure reopens it, a neutral outcome releases the probe lease. Open: outcomes of
    /// requests admitted before the trip are ignored. In half-open, the outcome of a probe whose
    /// lease has passed to another caller is ignored too.
    /// - Parameters:
    ///   - outcome: What the request told about the endpoint.
    ///   - probeToken: The probe lease token when the request was a probe, else nil.
    ///   - now: The current time.
    /// - Returns: What changed.
    public mutating func record(_ outcome: CircuitOutcome, probeToken: String?, now: Date) -> CircuitRecording {
        let previous = record
        var transitions: [CircuitTransition] = []
        var applied = true
        switch record.state {
        case .closed:
            switch outcome {
            case .success:
                if record.consecutiveFailures != 0 || record.consecutiveRateLimits != 0 {
                    record.consecutiveFailures = 0
                    record.consecutiveRateLimits = 0
                    touch(now)
                }
            case .neutral:
                applied = false
            case .failure, .rateLimited:
                countFailure(outcome)
                touch(now)
                if record.consecutiveFailures >= policy.failureThreshold {
                    let rateLimited = record.consecutiveRateLimits >= policy.failureThreshold
                    transitions.append(open(
                        cause: .thresholdReached(failures: record.consecutiveFailures,
                                                 threshold: policy.failureThreshold, rateLimited: rateLimited),
                        duration: policy.openDuration(rateLimited: rateLimited, failedProbes: record.failedProbes),
                        now: now
                    ))
                }
            }
        case .open:
            applied = false
        case .halfOpen:
            if let probeToken, record.probeOwner != nil, record.probeOwner != probeToken {
                applied = false
                break
            }
            switch outcome {
            case .success:
                transitions.append(move(to: .closed, cause: .probeSucceeded, now: now))
                clearCounters()
            case .failure, .rateLimited:
                countFailure(outcome)
                record.failedProbes += 1
                // The same rule as a trip from closed: the rate-limit duration applies while the last
                // `threshold` failures were all rate limits (a 1-hour trip whose probe meets another 429).
                let rateLimited = record.consecutiveRateLimits >= policy.failureThreshold
                transitions.append(open(
                    cause: .probeFailed(rateLimited: outcome == .rateLimited),
                    duration: policy.openDuration(rateLimited: rateLimited, failedProbes: record.failedProbes),
                    now: now
                ))
            case .neutral:
                if record.probeOwner != nil || record.probeLeaseUntil != nil {
                    record.probeOwner = nil
                    record.probeLeaseUntil = nil
                    touch(now)
                } else {
                    applied = false
                }
            }
        }
        return CircuitRecording(outcome: outcome, previousState: previous.state, applied: applied,
                                transitions: transitions, record: record)
    }

    // MARK: Administration

    /// Closes the circuit and clears its counters and lease; the trip count is kept.
    /// - Parameter now: The current time.
    /// - Returns: The transition, or nil when the circuit was already closed with nothing counted.
    public mutating func reset(now: Date) -> CircuitTransition? {
        let pristine = record.state == .closed && record.consecutiveFailures == 0 && record.consecutiveRateLimits == 0
            && record.failedProbes == 0 && record.probeOwner == nil && record.openUntil == nil
        guard !pristine else { return nil }
        let transition = move(to: .closed, cause: .reset, now: now)
        clearCounters()
        return transition
    }

    /// Opens the circuit for `duration`, whatever its state; the failure count is kept.
    /// - Parameters:
    ///   - duration: How long to refuse requests.
    ///   - now: The current time.
    /// - Returns: The transition.
    public mutating func forceOpen(for duration: Duration, now: Date) -> CircuitTransition {
        open(cause: .forcedOpen(duration: duration), duration: duration, now: now, countsAsTrip: false)
    }

    // MARK: Steps

    private mutating func countFailure(_ outcome: CircuitOutcome) {
        record.consecutiveFailures += 1
        record.consecutiveRateLimits = outcome == .rateLimited ? record.consecutiveRateLimits + 1 : 0
    }

    private mutating func clearCounters() {
        record.consecutiveFailures = 0
        record.consecutiveRateLimits = 0
        record.failedProbes = 0
        record.openedAt = nil
        record.openUntil = nil
        record.openDuration = nil
        record.probeOwner = nil
        record.probeLeaseUntil = nil
    }

    private mutating func open(cause: CircuitTransitionCause, duration: Duration, now: Date,
                               countsAsTrip: Bool = true) -> CircuitTransition {
        let from = record.state
        record.state = .open
        record.openedAt = now
        record.openUntil = now.addingTimeInterval(duration.timeInterval)
        record.openDuration = duration
        record.probeOwner = nil
        record.probeLeaseUntil = nil
        if countsAsTrip { record.trips += 1 }
        touch(now)
        return CircuitTransition(endpoint: record.endpoint, at: now, from: from, to: .open, cause: cause,
                                 openDuration: duration)
    }

    private mutating func move(to state: CircuitState, cause: CircuitTransitionCause, now: Date) -> CircuitTransition {
        let from = record.state
        record.state = state
        touch(now)
        return CircuitTransition(endpoint: record.endpoint, at: now, from: from, to: state, cause: cause)
    }

    private mutating func touch(_ now: Date) {
        record.updatedAt = now
        record.failureThreshold = policy.failureThreshold
        hasChanges = true
    }

    /// A wall clock set back must not stretch the wait: the window restarts at `now` with no more
    /// than its own duration left.
    private mutating func clampOpenWindow(now: Date) {
        guard let openUntil = record.openUntil else { return }
        let duration = record.openDuration?.timeInterval ?? policy.openDuration.timeInterval
        if openUntil.timeIntervalSince(now) > duration {
            record.openedAt = now
            record.openUntil = now.addingTimeInterval(duration)
            record.openDuration = .milliseconds(SaturatingConversion.int64((duration * 1000).rounded()))
            touch(now)
        }
    }

    /// The same for a probe lease: a clock set back cannot hold the probe longer than one lease.
    private mutating func clampProbeLease(now: Date) {
        guard let leaseUntil = record.probeLeaseUntil else { return }
        let lease = policy.probeLeaseDuration.timeInterval
        if leaseUntil.timeIntervalSince(now) > lease {
            record.probeLeaseUntil = now.addingTimeInterval(lease)
            touch(now)
        }
    }
}

/// The result of ``CircuitStateMachine/admit(probeToken:now:)``.
public struct CircuitAdmission: Sendable, Hashable {
    /// Whether the request may be sent.
    public var decision: CircuitDecision
    /// The transitions the admission caused (open → half-open when the open duration has passed).
    public var transitions: [CircuitTransition]
    /// The circuit afterwards.
    public var record: CircuitRecord

    /// Creates an admission result.
    /// - Parameters:
    ///   - decision: The decision.
    ///   - transitions: The transitions it caused.
    ///   - record: The circuit afterwards.
    public init(decision: CircuitDecision, transitions: [CircuitTransition], record: CircuitRecord) {
        self.decision = decision
        self.transitions = transitions
        self.record = record
    }
}

/// The result of ``CircuitStateMachine/record(_:probeToken:now:)``.
public struct CircuitRecording: Sendable, Hashable {
    /// The outcome recorded.
    public var outcome: CircuitOutcome
    /// The stored state before the outcome.
    public var previousState: CircuitState
    /// False when the outcome was ignored: neutral, arrived while open, or from a probe whose lease
    /// another caller now holds.
    public var applied: Bool
    /// The transitions it caused.
    public var transitions: [CircuitTransition]
    /// The circuit afterwards.
    public var record: CircuitRecord

    /// Creates a recording result.
    /// - Parameters:
    ///   - outcome: The outcome.
    ///   - previousState: The state before.
    ///   - applied: Whether it changed anything.
    ///   - transitions: The transitions it caused.
    ///   - record: The circuit afterwards.
    public init(outcome: CircuitOutcome, previousState: CircuitState, applied: Bool,
                transitions: [CircuitTransition], record: CircuitRecord) {
        self.outcome = outcome
        self.previousState = previousState
        self.applied = applied
        self.transitions = transitions
        self.record = record
    }
}
