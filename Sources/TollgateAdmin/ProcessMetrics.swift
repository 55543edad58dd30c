import CoreMetrics
import Foundation
import Prometheus

/// This process's own counters and histograms (the gate's swift-metrics instruments), collected
/// in a Prometheus registry for the admin listener's `/metrics`.
///
/// Give ``factory`` to the gate (`Gate(…, metrics: processMetrics.factory)`) or bootstrap
/// `MetricsSystem` with it. The gate's `tollgate_circuit_state` gauge (this process's last view)
/// is exported as `tollgate_process_circuit_state`, so that `tollgate_circuit_state` is the store's
/// truth, the same from every process.
public struct ProcessMetrics: Sendable {
    /// The registry the instruments write to.
    public let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory over ``registry``.
    public let factory: PrometheusMetricsFactory

    /// The help line of each metric the gate makes (swift-metrics has no help text of its own).
    static let help: [String: String] = [
        "tollgate_requests_total": "Answers of this process by endpoint and source (network, cache, revalidated, coalesced, stale_*, not_cached).",
        "tollgate_quota_units_total": "Quota units this process charged, net of refunds.",
        "tollgate_refusals_total": "Requests this process refused or served stale, by reason (circuit_open, throttled, quota_exceeded).",
        "tollgate_retries_total": "Attempts this process made after a request's first.",
        "tollgate_upstream_latency_seconds": "Time from sending an attempt upstream to its answer's head, or its failure.",
        "tollgate_throttle_wait_seconds": "Time an admission waited for the throttle window to have room.",
        "tollgate_cache_hit_rate": "(cache + revalidated) / answers from the cache or the network, in this process.",
        "tollgate_process_circuit_state": "The circuit state this process last saw: 0 closed, 1 half-open, 2 open.",
    ]

    /// Creates an empty registry and its factory.
    public init() {
        self.init(registry: PrometheusCollectorRegistry())
    }

    /// Wraps a registry.
    /// - Parameter registry: The registry the instruments write to.
    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in
            (name == "tollgate_circuit_state" ? "tollgate_process_circuit_state" : name, labels)
        }
        factory.durationHistogramBuckets["tollgate_throttle_wait_seconds"] = [
            .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
            .seconds(60),
        ]
        self.factory = factory
    }

    /// The registry's text with a `# HELP` line before each metric the gate makes.
    /// - Returns: The Prometheus text.
    func render() -> String {
        Self.addingHelp(to: registry.emitToString())
    }

    /// Inserts `# HELP` lines before the `# TYPE` lines of known metrics that have none.
    static func addingHelp(to text: String) -> String {
        var lines: [Substring] = []
        var previous: Substring = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE ") {
                let name = line.dropFirst("# TYPE ".count).prefix { $0 != " " }
                if !previous.hasPrefix("# HELP \(name) "), let help = help[String(name)] {
                    lines.append("# HELP \(name) \(help)")
                }
            }
            lines.append(line)
            previous = line
        }
        return lines.joined(separator: "\n")
    }
}
