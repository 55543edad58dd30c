import Foundation

/// What a quota refusal means for a request (``QuotaLedger/verdict(on:endpoint:)``): a value the
/// gate's request machine decides on, not an error thrown and caught back.
public enum QuotaRefusalVerdict: Sendable {
    /// The bucket paces its last units: the request may go in `retryAfter` seconds.
    case wait(retryAfter: TimeInterval)
    /// The bucket cannot pay: the error to report (``TollgateError/quotaExceeded(endpoint:cost:remaining:resetsAt:)``).
    case refuse(TollgateError)
}
