extension HTTPTransportError: CircuitClassifiableError {
    /// Timeouts and failed or refused connections say the server is unwell; a request that could
    /// not be built, or a body too large to accept, says nothing about it.
    public var circuitOutcome: CircuitOutcome {
        switch self {
        case .timedOut, .connectionFailed, .connectionRefused: .failure
        case .invalidRequest, .responseTooLarge: .neutral
        }
    }

    /// How the retry policy treats the error.
    public var retryTrigger: RetryTrigger {
        switch self {
        case .timedOut: .timeout
        case .connectionFailed, .connectionRefused: .connectionError
        case .invalidRequest, .responseTooLarge: .other
        }
    }
}
