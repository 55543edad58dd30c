import Foundation
import Prometheus
import TollgateStore

/// The shared state as Prometheus gauges, read from the store at scrape time: every process (and
/// every machine of a fleet) over the same store reports the same values.
///
/// | metric | labels |
/// |---|---|
/// | `tollgate_store_up` | — 1 when the store could be read |
/// | `tollgate_quota_used_units`, `tollgate_quota_limit_units`, `tollgate_quota_remaining_units` | `bucket` |
/// | `tollgate_quota_exhausted` | `bucket` — 1 while the server's "quota exhausted" mark holds |
/// | `tollgate_quota_reset_seconds` | — seconds until the next Pacific midnight |
/// | `tollgate_quota_burn_rate_units_per_hour` | `bucket` — over the last hour |
/// | `tollgate_quota_exhaustion_forecast_seconds` | `bucket` — at that rate; absent while nothing is spent |
/// | `tollgate_quota_endpoint_used_units` | `bucket`, `endpoint` |
/// | `tollgate_circuit_state` | `endpoint`, `state` (`closed`, `open`, `half_open`) — 1 for the state it is in |
/// | `tollgate_circuit_retry_seconds`, `tollgate_circuit_consecutive_failures` | `endpoint` |
/// | `tollgate_throttle_window_requests`, `tollgate_throttle_limit_requests`, `tollgate_throttle_remaining_requests`, `tollgate_throttle_window_seconds` | `endpoint` |
/// | `tollgate_cache_entries`, `tollgate_cache_body_bytes` | — |
/// | `tollgate_cache_today_answers` | `endpoint`, `result` (`hit`, `revalidation`, `miss`, `stale`) — since the Pacific midnight |
enum StoreMetrics {
    /// The gauges of one read, in the Prometheus text format.
    /// - Parameters:
    ///   - snapshot: The store's state, or nil when it could not be read (only `tollgate_store_up 0`).
    ///   - forecasts: Each bucket's burn rate.
    /// - Returns: The text.
    static func render(_ snapshot: DashboardSnapshot?, forecasts: [OperatorsSnapshot.Forecast]) -> String {
        let registry = PrometheusCollectorRegistry()
        func gauge(_ name: String, _ unit: String, _ help: String, _ labels: [(String, String)] = []) -> Gauge {
            let descriptor = MetricNameDescriptor(metricName: name, unitName: unit, helpText: help)
            return labels.isEmpty ? registry.makeGauge(descriptor: descriptor)
                : registry.makeGauge(descriptor: descriptor, labels: labels)
        }
        gauge("tollgate_store_up", "", "1 when the admin listener could read the store at this scrape, else 0.")
            .set(to: snapshot == nil ? 0 : 1)
        guard let snapshot else { return registry.emitToString() }

        gauge("tollgate_quota_reset", "seconds", "Seconds until the daily quotas reset at the next Pacific midnight.")
            .set(to: max(0, snapshot.resetsAt.timeIntervalSince(snapshot.takenAt)).rounded())
        for bucket in snapshot.buckets {
            let labels = [("bucket", bucket.bucket)]
            gauge("tollgate_quota_used", "units", "Units used today in the bucket, net of refunds.", labels)
                .set(to: Double(bucket.used))
            gauge("tollgate_quota_limit", "units", "The bucket's daily limit in units.", labels)
                .set(to: Double(bucket.limit))
            gauge("tollgate_quota_remaining", "units", "Units left today in the bucket (0 while the server says it is spent).",
                  labels).set(to: Double(bucket.remaining))
            gauge("tollgate_quota_exhausted", "", "1 while the server's quota-exhausted answer blocks the bucket, else 0.",
                  labels).set(to: bucket.exhaustedUntil == nil ? 0 : 1)
            for endpoint in bucket.endpoints {
                gauge("tollgate_quota_endpoint_used", "units", "Units an endpoint used today in the bucket, net of refunds.",
                      [("bucket", bucket.bucket), ("endpoint", endpoint.endpoint)]).set(to: Double(endpoint.units))
            }
        }
        for forecast in forecasts {
            let labels = [("bucket", forecast.bucket)]
            gauge("tollgate_quota_burn_rate", "units_per_hour", "Net units charged to the bucket over the last hour.", labels)
                .set(to: forecast.unitsPerHour)
            if let seconds = forecast.secondsToExhaustion {
                gauge("tollgate_quota_exhaustion_forecast", "seconds",
                      "Seconds until the bucket runs out at the last hour's burn rate (absent while nothing is spent).",
                      labels).set(to: seconds.rounded())
            }
        }
        for circuit in snapshot.circuits {
            for state in CircuitState.allCases {
                gauge("tollgate_circuit_state", "", "1 for the state the endpoint's circuit is in, 0 for the others.",
                      [("endpoint", circuit.endpoint), ("state", state.rawValue)])
                    .set(to: circuit.state == state.rawValue ? 1 : 0)
            }
            let labels = [("endpoint", circuit.endpoint)]
            gauge("tollgate_circuit_retry", "seconds", "Seconds until an open circuit admits a probe.", labels)
                .set(to: Double(circuit.retryInSeconds))
            gauge("tollgate_circuit_consecutive_failures", "", "Failures in a row counted by the endpoint's circuit.", labels)
                .set(to: Double(circuit.consecutiveFailures))
        }
        for throttle in snapshot.throttles {
            let labels = [("endpoint", throttle.endpoint)]
            gauge("tollgate_throttle_window", "requests", "Requests in the endpoint's throttle window now.", labels)
                .set(to: Double(throttle.count))
            gauge("tollgate_throttle_limit", "requests", "Requests the endpoint's throttle admits per window.", labels)
                .set(to: Double(throttle.limit))
            gauge("tollgate_throttle_remaining", "requests", "Requests the endpoint's throttle window still admits.", labels)
                .set(to: Double(throttle.remaining))
            gauge("tollgate_throttle_window", "seconds", "The length of the endpoint's throttle window.", labels)
                .set(to: throttle.windowSeconds)
        }
        gauge("tollgate_cache_entries", "", "Answers the cache holds.").set(to: Double(snapshot.cacheEntries))
        gauge("tollgate_cache_body", "bytes", "Body bytes the cache holds.").set(to: Double(snapshot.cacheBodyBytes))
        for day in snapshot.cache {
            for (result, count) in [("hit", day.hits), ("revalidation", day.revalidations), ("miss", day.misses),
                                    ("stale", day.stale)] {
                gauge("tollgate_cache_today", "answers", "The cache's answers since the Pacific midnight, by result.",
                      [("endpoint", day.endpoint), ("result", result)]).set(to: Double(count))
            }
        }
        return registry.emitToString()
    }
}
