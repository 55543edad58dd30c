/// The three states of an endpoint's circuit.
public enum CircuitState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Normal operation: every request is allowed.
    case closed
    /// The endpoint failed repeatedly: every request is refused until the open duration has passed.
    case open
    /// The open duration has passed: one probe at a time, across all processes, tests recovery.
    case halfOpen = "half_open"

    /// The state as the log lines spell it: `CLOSED`, `OPEN`, `HALF-OPEN`.
    public var description: String {
        switch self {
        case .closed: "CLOSED"
        case .open: "OPEN"
        case .halfOpen: "HALF-OPEN"
        }
    }
}
