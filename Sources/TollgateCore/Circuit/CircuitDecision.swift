import Foundation

/// The lease on a half-open circuit's one probe: pass it back with the probe's outcome.
public struct CircuitProbe: Sendable, Hashable {
    /// Identifies the holder across processes; stored as the circuit's probe owner.
    public var token: String
    /// When the lease expires: after that, another caller may probe.
    public var leaseUntil: Date

    /// Creates a probe lease.
    /// - Parameters:
    ///   - token: The holder's token.
    ///   - leaseUntil: When the lease expires.
    public init(token: String, leaseUntil: Date) {
        self.token = token
        self.leaseUntil = leaseUntil
    }
}

/// Whether a circuit lets a request through.
public enum CircuitDecision: Sendable, Hashable {
    /// The circuit is closed: send the request.
    case allowed
    /// The circuit is half-open and this caller holds the one probe: send the request and record
    /// its outcome with this lease.
    case probe(CircuitProbe)
    /// The circuit is open, or half-open with a probe already in flight: do not send.
    /// `retryAfter` is in seconds, never more than the circuit's open (or lease) duration.
    case refused(retryAfter: TimeInterval, state: CircuitState)

    /// Whether the request may be sent.
    public var isAllowed: Bool {
        if case .refused = self { return false }
        return true
    }

    /// The probe lease, when this caller holds one.
    public var probe: CircuitProbe? {
        if case .probe(let probe) = self { return probe }
        return nil
    }

    /// How long to wait before asking again, when refused.
    public var retryAfter: TimeInterval? {
        if case .refused(let retryAfter, _) = self { return retryAfter }
        return nil
    }
}
