/// Why ``Gate/sendReportingCost(_:body:endpoint:options:via:)`` gave no answer, with what the
/// attempt cost before it failed: a command-line tool or a proxy reports every unit charged, even
/// when the request ends in an error.
public struct GateFailure: Error, Sendable, CustomStringConvertible {
    /// The reason: a ``TollgateError`` refusal, an ``HTTPTransportError``, or the store's error
    /// when the ledger could not be written.
    public let error: any Error
    /// Quota units charged, net of refunds, by the attempts made before the failure.
    public let unitsCharged: Int
    /// Requests sent to the server before the failure.
    public let attempts: Int

    /// Creates a failure.
    /// - Parameters:
    ///   - error: The reason.
    ///   - unitsCharged: Units charged before it.
    ///   - attempts: Requests sent before it.
    public init(error: any Error, unitsCharged: Int, attempts: Int) {
        self.error = error
        self.unitsCharged = unitsCharged
        self.attempts = attempts
    }

    public var description: String { "\(error)" }
}
