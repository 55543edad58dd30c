import CoreMetrics
import Synchronization

/// The gate's swift-metrics instruments, each with an `endpoint` dimension:
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `tollgate_requests_total` | counter | `endpoint`, `source` (`network`, `cache`, `revalidated`, `stale_circuit_open`, …) |
/// | `tollgate_quota_units_total` | counter | `endpoint` — units charged, net of refunds |
/// | `tollgate_refusals_total` | counter | `endpoint`, `reason` (`circuit_open`, `throttled`, `quota_exceeded`), stale serves included |
/// | `tollgate_circuit_state` | gauge | `endpoint` — 0 closed, 1 half-open, 2 open |
/// | `tollgate_cache_hit_rate` | gauge | `endpoint` — (cache + revalidated) / answers from cache or network, in this process |
/// | `tollgate_retries_total` | counter | `endpoint` — attempts after a request's first |
/// | `tollgate_upstream_latency_seconds` | timer | `endpoint` — from an attempt's send to its answer's head (or failure) |
/// | `tollgate_throttle_wait_seconds` | timer | `endpoint` — time an admission waited for the throttle window |
///
/// They go to whatever `MetricsSystem` the application bootstrapped (none by default).
final class GateMetrics: Sendable {
    private let factory: any MetricsFactory
    /// False when the factory is swift-metrics' no-op one (no `MetricsSystem` bootstrapped):
    /// nothing would read what is recorded, and a cache hit need not pay for counting it.
    private let isRecording: Bool
    private let cacheCounts = Mutex<[String: (served: Int, total: Int)]>([:])
    /// `tollgate_requests_total` by endpoint and source, made once each: a counter and its
    /// dimensions cost allocations that a cache hit would otherwise pay every time.
    private let requestCounters = Mutex<[RequestCounterKey: Counter]>([:])
    /// `tollgate_cache_hit_rate` by endpoint, made once each for the same reason.
    private let hitRateGauges = Mutex<[String: Gauge]>([:])

    private struct RequestCounterKey: Hashable {
        let endpoint: String
        let source: ResponseSource
    }

    init(factory: any MetricsFactory) {
        self.factory = factory
        self.isRecording = !(factory is NOOPMetricsHandler)
    }

    func record(_ answer: GateResponse, endpoint: String) {
        guard isRecording else { return }
        requestsCounter(endpoint: endpoint, source: answer.source).increment()
        if answer.unitsCharged != 0 {
            Counter(label: "tollgate_quota_units_total", dimensions: [("endpoint", endpoint)], factory: factory)
                .increment(by: Int64(answer.unitsCharged))
        }
        if case .stale(let reason) = answer.source, let refusal = Self.refusalLabel(reason) {
            refused(endpoint: endpoint, reason: refusal)
        }
        let fromCache: Bool? = switch answer.source {
        case .cache, .fresh, .revalidated, .coalesced: true
        case .network: false
        case .stale, .notCached: nil
        }
        if let fromCache {
            let rate = cacheCounts.withLock { counts -> Double in
                var entry = counts[endpoint] ?? (0, 0)
                entry.total += 1
                if fromCache { entry.served += 1 }
                counts[endpoint] = entry
                return Double(entry.served) / Double(entry.total)
            }
            hitRateGauge(endpoint: endpoint).record(rate)
        }
    }

    func record(_ refusal: TollgateError, endpoint: String) {
        guard isRecording else { return }
        switch refusal {
        case .circuitOpen: refused(endpoint: endpoint, reason: "circuit_open")
        case .throttled: refused(endpoint: endpoint, reason: "throttled")
        case .quotaExceeded: refused(endpoint: endpoint, reason: "quota_exceeded")
        }
    }

    func record(_ state: CircuitState, endpoint: String) {
        guard isRecording else { return }
        let value = switch state {
        case .closed: 0
        case .halfOpen: 1
        case .open: 2
        }
        Gauge(label: "tollgate_circuit_state", dimensions: [("endpoint", endpoint)], factory: factory).record(value)
    }

    func recordRetry(endpoint: String) {
        guard isRecording else { return }
        Counter(label: "tollgate_retries_total", dimensions: [("endpoint", endpoint)], factory: factory).increment()
    }

    func recordUpstreamLatency(_ duration: Duration, endpoint: String) {
        guard isRecording else { return }
        CoreMetrics.Timer(label: "tollgate_upstream_latency_seconds", dimensions: [("endpoint", endpoint)], factory: factory)
            .recordNanoseconds(Self.nanoseconds(duration))
    }

    func recordThrottleWait(_ duration: Duration, endpoint: String) {
        guard isRecording else { return }
        CoreMetrics.Timer(label: "tollgate_throttle_wait_seconds", dimensions: [("endpoint", endpoint)], factory: factory)
            .recordNanoseconds(Self.nanoseconds(duration))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
            ? .max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    private func requestsCounter(endpoint: String, source: ResponseSource) -> Counter {
        let key = RequestCounterKey(endpoint: endpoint, source: source)
        if let known = requestCounters.withLock({ $0[key] }) { return known }
        let counter = Counter(label: "tollgate_requests_total",
                              dimensions: [("endpoint", endpoint), ("source", Self.label(source))], factory: factory)
        requestCounters.withLock { counters in
            // Endpoints come from callers; a bound keeps hostile names from growing this without end.
            if counters.count >= 4096 { counters.removeAll(keepingCapacity: true) }
            counters[key] = counter
        }
        return counter
    }

    private func hitRateGauge(endpoint: String) -> Gauge {
        if let known = hitRateGauges.withLock({ $0[endpoint] }) { return known }
        let gauge = Gauge(label: "tollgate_cache_hit_rate", dimensions: [("endpoint", endpoint)], factory: factory)
        hitRateGauges.withLock { gauges in
            if gauges.count >= 4096 { gauges.removeAll(keepingCapacity: true) }
            gauges[endpoint] = gauge
        }
        return gauge
    }

    private func refused(endpoint: String, reason: String) {
        Counter(label: "tollgate_refusals_total", dimensions: [("endpoint", endpoint), ("reason", reason)], factory: factory)
            .increment()
    }

    private static func label(_ source: ResponseSource) -> String {
        switch source {
        case .network: "network"
        case .cache: "cache"
        case .fresh: "fresh"
        case .revalidated: "revalidated"
        case .stale(let reason): "stale_" + snakeCase(reason.rawValue)
        case .notCached: "not_cached"
        case .coalesced: "coalesced"
        }
    }

    private static func refusalLabel(_ reason: StaleReason) -> String? {
        switch reason {
        case .circuitOpen: "circuit_open"
        case .throttled: "throttled"
        case .quotaExhausted: "quota_exceeded"
        case .upstreamFailure, .revalidating: nil
        }
    }

    private static func snakeCase(_ text: String) -> String {
        text.reduce(into: "") { result, character in
            if character.isUppercase { result += "_" + character.lowercased() } else { result.append(character) }
        }
    }
}
