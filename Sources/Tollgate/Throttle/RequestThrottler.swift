import Foundation
import Logging
import Synchronization

/// A client-side throttle: a sliding window of requests per endpoint, persisted in the store.
///
/// Every admitted request is recorded with its time, so the window is shared by every process
/// that opens the store and survives restarts: a tool that crash-loops cannot bypass it. The
/// limits in force are written to `throttle_limits`, where the `throttle_status` view shows them.
///
/// ```swift
/// let throttler = try RequestThrottler(storage: store, configuration: .tieredBackend, clock: SystemClock())
/// let (allowed, retryAfter) = try await throttler.shouldAllowRequest(endpoint: "/api/activities")
/// guard allowed else { throw TollgateError.throttled(retryAfter: retryAfter ?? 60) }
/// ```
public final class RequestThrottler: Sendable {
    /// The limits in force.
    public let configuration: ThrottleConfiguration
    private let storage: any ThrottleStorage
    private let clock: any TollgateClock
    private let logger: Logger
    /// The latest reading of each endpoint's window by this process (see ``latestReading(of:)``).
    private let readings = Mutex<[String: ThrottleReading]>([:])

    /// Creates a throttle over a store.
    /// - Parameters:
    ///   - storage: Where the windows live, such as an ``SQLiteStore``.
    ///   - configuration: The limits; 30 requests a minute per endpoint by default.
    ///   - clock: The wall clock that times requests, and how waits sleep.
    ///   - logger: Where the throttle logs; the task's current logger by default.
    /// - Throws: ``ThrottleConfigurationError`` for an invalid limit.
    public init(
        storage: any ThrottleStorage,
        configuration: ThrottleConfiguration = ThrottleConfiguration(),
        clock: any TollgateClock = SystemClock(),
        logger: Logger = Logger.current
    ) throws(ThrottleConfigurationError) {
        try configuration.validate()
        self.storage = storage
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    /// Admits a request when the endpoint's window has room, and records it in the same
    /// transaction, so concurrent callers in any number of processes never exceed the limit.
    /// - Parameter endpoint: The endpoint, such as `/api/activities`.
    /// - Returns: Whether it is admitted and, when it is not, how many seconds until the window has
    ///   room (when the request that frees a slot leaves it).
    /// - Throws: Storage errors.
    public func shouldAllowRequest(endpoint: String) async throws -> (allowed: Bool, retryAfter: TimeInterval?) {
        let admission = try await admit(endpoint: endpoint)
        return (admission.allowed, admission.retryAfter)
    }

    /// Admits and records a request, or refuses it, with the window's count.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The admission.
    /// - Throws: Storage errors.
    public func admit(endpoint: String) async throws -> ThrottleAdmission {
        let admission = try await storage.admitRequest(
            endpoint: endpoint, limit: configuration.limit(for: endpoint), at: clock.now()
        )
        return report(admission, endpoint: endpoint)
    }

    /// Logs an admission that a caller ran itself (the gate, composing it with the circuit and the
    /// quota in one transaction), exactly as ``admit(endpoint:)`` does.
    /// - Parameters:
    ///   - admission: What the store decided.
    ///   - endpoint: The endpoint.
    /// - Returns: The admission.
    @discardableResult
    public func report(_ admission: ThrottleAdmission, endpoint: String) -> ThrottleAdmission {
        let metadata: Logger.Metadata = [
            "throttle.endpoint": "\(endpoint)", "throttle.count": "\(admission.count)", "throttle.limit": "\(admission.limit)",
        ]
        let reading = ThrottleReading(endpoint: endpoint, limit: configuration.limit(for: endpoint),
                                      count: admission.count, retryAfter: admission.retryAfter)
        readings.withLock { readings in
            // Endpoints come from callers; a bound keeps hostile names from growing this without end.
            if readings.count >= 4096, readings[endpoint] == nil { readings.removeAll(keepingCapacity: true) }
            readings[endpoint] = reading
        }
        if admission.allowed {
            logger.debug("Allowing \(endpoint) - \(admission.count)/\(admission.limit) requests in window", metadata: metadata)
        } else {
            logger.debug("Throttling \(endpoint) - \(admission.count)/\(admission.limit) requests in window", metadata: metadata)
            logger.debug("Retry after: \(Self.wholeSeconds(admission.retryAfter ?? 0))s", metadata: metadata)
        }
        return admission
    }

    /// What this process's latest admission of an endpoint read of its window, with no read of the
    /// store: other processes' requests since then are not counted.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The reading, or nil when this process has not admitted the endpoint yet.
    public func latestReading(of endpoint: String) -> ThrottleReading? {
        readings.withLock { $0[endpoint] }
    }

    /// Waits, on the clock, until the endpoint's window admits a request, and admits it.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - maximumWait: The longest the call may wait in total.
    /// - Returns: How long it waited.
    /// - Throws: ``TollgateError/throttled(retryAfter:)`` without waiting further when the window
    ///   would not have room within `maximumWait`; `CancellationError`; storage errors.
    @discardableResult
    public func waitUntilAllowed(endpoint: String, maximumWait: Duration) async throws -> Duration {
        var waited = Duration.zero
        while true {
            let admission = try await admit(endpoint: endpoint)
            if admission.allowed { return waited }
            let retryAfter = admission.retryAfter ?? configuration.limit(for: endpoint).window.timeInterval
            let delay = Duration.milliseconds(SaturatingConversion.int64((retryAfter * 1000).rounded(.up)))
            guard waited + delay <= maximumWait else { throw TollgateError.throttled(retryAfter: retryAfter) }
            logger.debug("Waiting \(Self.wholeSeconds(retryAfter))s for \(endpoint)", metadata: ["throttle.endpoint": "\(endpoint)"])
            try await clock.sleep(for: delay)
            waited += delay
        }
    }

    /// The requests in the endpoint's window now.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: How many were admitted within the window.
    /// - Throws: Storage errors.
    public func currentCount(for endpoint: String) async throws -> Int {
        try await window(for: endpoint).count
    }

    /// The requests the endpoint may still make now.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The limit minus the requests in the window, at least zero.
    /// - Throws: Storage errors.
    public func remainingRequests(for endpoint: String) async throws -> Int {
        try await window(for: endpoint).remaining
    }

    /// The endpoint's window now: count, limit and time until it has room.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The window.
    /// - Throws: Storage errors.
    public func window(for endpoint: String) async throws -> ThrottleWindow {
        try await storage.throttleWindow(endpoint: endpoint, limit: configuration.limit(for: endpoint), at: clock.now())
    }

    /// Forgets the recorded requests of one endpoint or of all; the reset is recorded in `admin_events`.
    /// - Parameter endpoint: The endpoint, or nil for every endpoint.
    /// - Returns: How many recorded requests were forgotten.
    /// - Throws: Storage errors.
    @discardableResult
    public func reset(endpoint: String? = nil) async throws -> Int {
        let forgotten = try await storage.resetThrottle(endpoint: endpoint, at: clock.now())
        logger.notice("Throttle reset for \(endpoint ?? "every endpoint"): \(forgotten) recorded requests forgotten")
        return forgotten
    }

    private static func wholeSeconds(_ interval: TimeInterval) -> Int {
        max(0, Int(interval.rounded(.up)))
    }
}
