import Logging
import Synchronization

/// The gate's logger with each endpoint's `gate.endpoint` metadata already set, built once per
/// endpoint.
///
/// Setting metadata on a `Logger` is not free: swift-log's own `StreamLogHandler`, for one, renders
/// all of its metadata again on every change. Set on every request that went to the network, it cost
/// about 3 µs of CPU per `304` (`perf` samples of the end-to-end harness). Endpoints are few, so
/// each one's logger is kept; past ``capacity`` of them (names made from arbitrary paths, say) the
/// metadata is set per request again rather than kept without bound.
final class EndpointLoggers: Sendable {
    /// How many endpoints' loggers are kept.
    static let capacity = 1024

    private let base: Logger
    private let loggers = Mutex<[String: Logger]>([:])

    /// - Parameter base: The logger every endpoint's logger is made from.
    init(base: Logger) {
        self.base = base
    }

    /// The base logger with `gate.endpoint` set to `endpoint`.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The logger.
    func logger(for endpoint: String) -> Logger {
        if let kept = loggers.withLock({ $0[endpoint] }) { return kept }
        var logger = base
        logger[metadataKey: "gate.endpoint"] = "\(endpoint)"
        loggers.withLock { loggers in
            if loggers.count < Self.capacity { loggers[endpoint] = logger }
        }
        return logger
    }
}
