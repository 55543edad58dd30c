import Foundation
import HTTPTypes

/// When and how long to wait before sending a failed request again (1 s, 2 s, 4 s, at most 3 retries by default).
///
/// Exponential backoff from ``initialDelay``, doubling each time, for at most ``maximumRetries``
/// retries. With the defaults and jitter off:
///
/// | Retry | Delay | With the default ±20 % jitter |
/// |---|---|---|
/// | 1 | 1 s | 0.8 – 1.2 s |
/// | 2 | 2 s | 1.6 – 2.4 s |
/// | 3 | 4 s | 3.2 – 4.8 s |
/// | 4 | 8 s (only when ``maximumRetries`` ≥ 4) | 6.4 – 9.6 s |
/// | n | `initialDelay × multiplier^(n−1)`, capped by ``maximumDelay`` | |
///
/// A `Retry-After` from the server wins over the schedule, unjittered, when it asks for at least
/// the schedule's delay. One that asks for less (`Retry-After: 0`, a date already past) is raised to
/// the schedule: the retry waits as if the server had sent none, so a server cannot make the
/// gate hammer it (`Retry-After: 0` on a 503 once gave 4 attempts in 80 ms). With the defaults:
///
/// | Retry | `Retry-After` | Delay |
/// |---|---|---|
/// | 1 | none, 0 or 1 s | 1 s (± jitter) |
/// | 2 | none, 0 or 1 s | 2 s (± jitter) |
/// | 3 | 3 s | 4 s (± jitter) |
/// | any | 7 s | 7 s, unjittered |
/// | any | over ``maximumDelay`` (60 s) | no retry: the answer goes back with its `Retry-After` |
///
/// When it asks for more than ``maximumDelay``, the policy does not sleep: the answer is returned
/// to the caller with its `Retry-After`.
///
/// Retried: statuses in ``retryableStatuses`` (429, 502, 503, 504; add 500 with
/// ``retryingInternalServerErrors()``), timeouts and connection errors — and only for
/// ``idempotentMethods`` unless the request is marked idempotent.
public struct RetryPolicy: Sendable, Hashable {
    /// The most retries after the first attempt. 3 by default; 0 disables retrying.
    public var maximumRetries: Int
    /// The delay before the first retry. 1 second by default.
    public var initialDelay: Duration
    /// The factor between consecutive delays. 2 by default.
    public var multiplier: Double
    /// The longest wait: scheduled delays are capped to it, and a longer `Retry-After` stops the
    /// retrying. 60 seconds by default.
    public var maximumDelay: Duration
    /// The spread of a scheduled delay, as a fraction: the delay is drawn uniformly from
    /// `delay × (1 − jitter) … delay × (1 + jitter)`. 0.2 by default; 0 turns jitter off.
    public var jitter: Double
    /// Status codes worth another attempt. 429, 502, 503 and 504 by default.
    public var retryableStatuses: Set<Int>
    /// Whether timeouts are retried. True by default.
    public var retriesTimeouts: Bool
    /// Whether connection errors are retried. True by default.
    public var retriesConnectionErrors: Bool
    /// Methods retried without the caller's say-so: GET, HEAD, OPTIONS, TRACE, PUT and DELETE (RFC
    /// 9110 §9.2.2).
    public var idempotentMethods: Set<HTTPRequest.Method>
    /// Whether a failing answer (a retryable status, a timeout, a lost connection) is answered at
    /// once with the stored response, when one may be served stale, instead of being retried.
    /// False by default: the retries come first, and the stored response only after them.
    public var servesStaleInsteadOfRetrying: Bool = false

    /// Creates a policy.
    /// - Parameters:
    ///   - maximumRetries: The most retries after the first attempt.
    ///   - initialDelay: The delay before the first retry.
    ///   - multiplier: The factor between consecutive delays.
    ///   - maximumDelay: The longest wait.
    ///   - jitter: The spread of scheduled delays, 0 … 1.
    ///   - retryableStatuses: Status codes worth another attempt.
    ///   - retriesTimeouts: Whether timeouts are retried.
    ///   - retriesConnectionErrors: Whether connection errors are retried.
    ///   - idempotentMethods: Methods retried without the caller's say-so.
    public init(
        maximumRetries: Int = 3,
        initialDelay: Duration = .seconds(1),
        multiplier: Double = 2,
        maximumDelay: Duration = .seconds(60),
        jitter: Double = 0.2,
        retryableStatuses: Set<Int> = [429, 502, 503, 504],
        retriesTimeouts: Bool = true,
        retriesConnectionErrors: Bool = true,
        idempotentMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace, .put, .delete]
    ) {
        self.maximumRetries = maximumRetries
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.jitter = jitter
        self.retryableStatuses = retryableStatuses
        self.retriesTimeouts = retriesTimeouts
        self.retriesConnectionErrors = retriesConnectionErrors
        self.idempotentMethods = idempotentMethods
    }

    /// The default policy: 1 s, 2 s, 4 s with ±20 % jitter, at most 3 retries.
    public static let `default` = RetryPolicy()

    /// A policy that never retries.
    public static let never = RetryPolicy(maximumRetries: 0)

    /// This policy, with 500 Internal Server Error retried too.
    /// - Returns: The changed policy.
    public func retryingInternalServerErrors() -> RetryPolicy {
        var policy = self
        policy.retryableStatuses.insert(500)
        return policy
    }

    // MARK: Decisions

    /// The scheduled delay before retry number `retry`, before jitter: `initialDelay ×
    /// multiplier^(retry−1)`, capped by ``maximumDelay``.
    /// - Parameter retry: The retry, from 1.
    /// - Returns: The delay.
    public func scheduledDelay(forRetry retry: Int) -> Duration {
        let seconds = initialDelay.timeInterval * pow(max(multiplier, 1), Double(max(retry, 1) - 1))
        return Self.duration(min(seconds, maximumDelay.timeInterval))
    }

    /// How long to wait before retry number `retry`, or why not to retry. A pure function: the
    /// same arguments and random numbers always give the same answer.
    ///
    /// | `Retry-After` | Delay |
    /// |---|---|
    /// | none | ``scheduledDelay(forRetry:)``, jittered (1 s, 2 s, 4 s by default) |
    /// | below ``scheduledDelay(forRetry:)`` (`0`, a date past) | the same as none: the schedule is the floor |
    /// | from ``scheduledDelay(forRetry:)`` to ``maximumDelay`` | the `Retry-After`, unjittered |
    /// | over ``maximumDelay`` | ``RetryDelay/giveUp(_:)`` with ``RetryStopReason/retryAfterExceedsMaximum(retryAfter:maximum:)`` |
    /// | any, past ``maximumRetries`` | ``RetryDelay/giveUp(_:)`` with ``RetryStopReason/retriesExhausted(retries:)`` |
    /// - Parameters:
    ///   - retry: The retry, from 1 (the second attempt).
    ///   - retryAfter: The server's `Retry-After`, which wins over the schedule when it is longer.
    ///   - now: The current time, for a `Retry-After` date.
    ///   - generator: The random source for jitter.
    /// - Returns: ``RetryDelay/wait(_:)`` or ``RetryDelay/giveUp(_:)``.
    public func delay(
        forRetry retry: Int, retryAfter: RetryAfter? = nil, now: Date = Date(),
        using generator: inout some RandomNumberGenerator
    ) -> RetryDelay {
        guard retry >= 1, retry <= maximumRetries else { return .giveUp(.retriesExhausted(retries: maximumRetries)) }
        let scheduled = scheduledDelay(forRetry: retry)
        if let retryAfter {
            let requested = retryAfter.delay(from: now)
            guard requested <= maximumDelay else {
                return .giveUp(.retryAfterExceedsMaximum(retryAfter: requested, maximum: maximumDelay))
            }
            // Shorter than the schedule: the schedule's own delay, below.
            if requested >= scheduled { return .wait(requested) }
        }
        let spread = min(max(jitter, 0), 1)
        guard spread > 0 else { return .wait(scheduled) }
        let factor = Double.random(in: (1 - spread)...(1 + spread), using: &generator)
        return .wait(Self.duration(min(scheduled.timeInterval * factor, maximumDelay.timeInterval)))
    }

    /// ``delay(forRetry:retryAfter:now:using:)`` with the system's random numbers.
    /// - Parameters:
    ///   - retry: The retry, from 1.
    ///   - retryAfter: The server's `Retry-After`.
    ///   - now: The current time, for a `Retry-After` date.
    /// - Returns: ``RetryDelay/wait(_:)`` or ``RetryDelay/giveUp(_:)``.
    public func delay(forRetry retry: Int, retryAfter: RetryAfter? = nil, now: Date = Date()) -> RetryDelay {
        var generator = SystemRandomNumberGenerator()
        return delay(forRetry: retry, retryAfter: retryAfter, now: now, using: &generator)
    }

    /// Whether a failed attempt is worth repeating, by what went wrong.
    /// - Parameter trigger: What went wrong.
    /// - Returns: True for a retryable status, a timeout or a connection error (as configured).
    public func isRetryable(_ trigger: RetryTrigger) -> Bool {
        switch trigger {
        case .status(let status): retryableStatuses.contains(status)
        case .timeout: retriesTimeouts
        case .connectionError: retriesConnectionErrors
        case .other: false
        }
    }

    /// Whether a request with `method` may be sent more than once.
    /// - Parameters:
    ///   - method: The request's method.
    ///   - markedIdempotent: Whether the caller vouches that repeating it is safe (a POST with an
    ///     idempotency key, a read-only RPC).
    /// - Returns: True for an idempotent method or a marked request.
    public func mayRetry(method: HTTPRequest.Method, markedIdempotent: Bool) -> Bool {
        markedIdempotent || idempotentMethods.contains(method)
    }

    private static func duration(_ seconds: TimeInterval) -> Duration {
        SaturatingConversion.duration(seconds: seconds)
    }
}

/// What went wrong in an attempt, as the retry policy sees it.
public enum RetryTrigger: Sendable, Hashable {
    /// The server answered with this status.
    case status(Int)
    /// The request timed out.
    case timeout
    /// The connection could not be made or broke.
    case connectionError
    /// Anything else: not retried.
    case other
}

extension RetryTrigger {
    /// The trigger of an HTTP answer: none for 200…399 (a success or a redirect is no reason to
    /// retry), its status otherwise. The one copy of that rule, asked by the gate's request machine.
    /// - Parameter status: The answer's status code.
    /// - Returns: The trigger, or nil when the answer is not retried.
    public static func answer(status: Int) -> RetryTrigger? {
        (200...399).contains(status) ? nil : .status(status)
    }
}

extension RetryPolicy {
    /// Why an attempt that failed with `trigger` is not retried, before any delay is worked out; nil
    /// when it may be. The one copy of these rules, in this order, asked by the gate's request
    /// machine (the only retry engine: ``Gate`` drives it).
    /// - Parameters:
    ///   - trigger: What went wrong.
    ///   - method: The request's method.
    ///   - markedIdempotent: The caller marked the request idempotent.
    ///   - circuit: The circuit's state after the attempt's outcome was recorded: an attempt that
    ///     opened it is the last.
    ///   - servesStaleInstead: A stored answer stands in, and the policy prefers it to another attempt.
    /// - Returns: The reason to stop, or nil.
    public func stopReason(
        for trigger: RetryTrigger, method: HTTPRequest.Method, markedIdempotent: Bool, circuit: CircuitState,
        servesStaleInstead: Bool = false
    ) -> RetryStopReason? {
        if circuit == .open { return .circuitOpen }
        if servesStaleInstead || !isRetryable(trigger) { return .notRetryable }
        if !mayRetry(method: method, markedIdempotent: markedIdempotent) { return .notIdempotent }
        return nil
    }
}

/// The answer of ``RetryPolicy/delay(forRetry:retryAfter:now:using:)``.
public enum RetryDelay: Sendable, Hashable {
    /// Sleep this long, then retry.
    case wait(Duration)
    /// Do not retry.
    case giveUp(RetryStopReason)
}

/// Why a policy stops retrying.
public enum RetryStopReason: Sendable, Hashable, CustomStringConvertible {
    /// The policy's retries are spent.
    case retriesExhausted(retries: Int)
    /// The server's `Retry-After` asks for longer than the policy's maximum delay.
    case retryAfterExceedsMaximum(retryAfter: Duration, maximum: Duration)
    /// The attempt's failure is not retryable.
    case notRetryable
    /// The method is not idempotent and the request was not marked idempotent.
    case notIdempotent
    /// The endpoint's circuit opened.
    case circuitOpen

    public var description: String {
        switch self {
        case .retriesExhausted(let retries): "\(retries) \(retries == 1 ? "retry" : "retries") spent"
        case .retryAfterExceedsMaximum(let retryAfter, let maximum):
            "Retry-After \(SaturatingConversion.int64(retryAfter.timeInterval.rounded(.up)))s exceeds the maximum delay "
                + "\(SaturatingConversion.int64(maximum.timeInterval.rounded(.up)))s"
        case .notRetryable: "not retryable"
        case .notIdempotent: "method not idempotent"
        case .circuitOpen: "circuit open"
        }
    }
}
