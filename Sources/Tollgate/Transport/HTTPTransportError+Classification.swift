extension HTTPTransportError: CircuitClassifiableError {
    /// Timeouts, failed or refused connections and answers that are not HTTP say the server is
    /// unwell; a request that could not be built, a body too large to accept, or a certificate
    /// this machine does not trust says nothing about it.
    public var circuitOutcome: CircuitOutcome {
        switch self {
        case .timedOut, .connectionFailed, .connectionRefused, .malformedResponse: .failure
        case .tlsFailure, .invalidRequest, .responseTooLarge: .neutral
        }
    }

    /// How the retry policy treats the error: timeouts and connection errors may pass; a TLS
    /// failure, a malformed answer, a request that cannot be sent and a body too large would fail
    /// the same way again, so they are never retried.
    public var retryTrigger: RetryTrigger {
        switch self {
        case .timedOut: .timeout
        case .connectionFailed, .connectionRefused: .connectionError
        case .tlsFailure, .malformedResponse, .invalidRequest, .responseTooLarge: .other
        }
    }
}
