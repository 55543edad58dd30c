import Foundation

/// Why the gate refused a request without sending it, in the words users see.
public enum TollgateError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The endpoint's circuit is open after repeated failures; nothing was sent.
    case circuitOpen(retryAfter: TimeInterval)
    /// The endpoint's client-side throttle window is full; nothing was sent.
    case throttled(retryAfter: TimeInterval)
    /// The request would spend more than the bucket has left today; nothing was sent or charged.
    case quotaExceeded(endpoint: String, cost: Int, remaining: Int, resetsAt: Date)

    /// How long to wait before trying again, in seconds.
    public var retryAfter: TimeInterval {
        switch self {
        case .circuitOpen(let retryAfter), .throttled(let retryAfter):
            retryAfter
        case .quotaExceeded:
            0
        }
    }

    public var description: String {
        switch self {
        case .circuitOpen(let retryAfter):
            "Service temporarily unavailable due to repeated failures. "
                + "Please try again in \(Self.wholeSeconds(retryAfter)) seconds."
        case .throttled(let retryAfter):
            "Too many requests. Please wait \(Self.wholeSeconds(retryAfter)) seconds before trying again."
        case .quotaExceeded(let endpoint, let cost, let remaining, let resetsAt)
        where PacificDay(containing: resetsAt).start == resetsAt:
            "Daily API quota exceeded: \(endpoint) costs \(cost) \(cost == 1 ? "unit" : "units") "
                + "and \(remaining) \(remaining == 1 ? "unit remains" : "units remain") today. "
                + "The quota resets at \(PacificDay.localTimeDescription(of: resetsAt))."
        case .quotaExceeded(let endpoint, let cost, let remaining, let resetsAt):
            // A bucket counted over another window than the Pacific day (an hour, a minute…).
            "API quota exceeded: \(endpoint) costs \(cost) \(cost == 1 ? "unit" : "units") "
                + "and \(remaining) \(remaining == 1 ? "unit remains" : "units remain") in this window. "
                + "The quota resets at \(QuotaWindow.instantKey(resetsAt))."
        }
    }

    public var errorDescription: String? { description }

    /// Seconds rounded up, so "try again in 0 seconds" is never said while the wait is not over.
    private static func wholeSeconds(_ interval: TimeInterval) -> Int {
        max(0, SaturatingConversion.int(interval.rounded(.up)))
    }
}
