import Foundation
import TollgateCore
import TollgateSQLite

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
/// | `tollgate_freshness_seconds` | `endpoint` (`*` for the default), `bucket`, `reason` (`fixed`, `budget_lasts`, `stretched`, `at_maximum`, `spent`, `ledger_unreadable`) — the `fresh_for` lifetime in force; only where one is chosen |
///
/// Written straight to text, one pass over the snapshot: a registry that copies its label sets on
/// every insertion took 50 s for 23,000 endpoints, and a scrape must answer within Prometheus's
/// 10 s whatever the store holds.
enum StoreMetrics {
    /// The gauges of one read, in the Prometheus text format.
    /// - Parameters:
    ///   - snapshot: The store's state, or nil when it could not be read (only `tollgate_store_up 0`).
    ///   - forecasts: Each bucket's burn rate.
    /// - Returns: The text.
    static func render(_ snapshot: DashboardSnapshot?, forecasts: [OperatorsSnapshot.Forecast]) -> String {
        var text = PrometheusText()
        text.gauge("tollgate_store_up", "1 when the admin listener could read the store at this scrape, else 0.",
                   value: snapshot == nil ? 0 : 1)
        guard let snapshot else { return text.rendered }

        text.gauge("tollgate_quota_reset_seconds", "Seconds until the daily quotas reset at the next Pacific midnight.",
                   value: max(0, snapshot.resetsAt.timeIntervalSince(snapshot.takenAt)).rounded())
        let buckets = snapshot.buckets
        text.gauge("tollgate_quota_used_units", "Units used today in the bucket, net of refunds.", buckets) {
            ([("bucket", $0.bucket)], Double($0.used))
        }
        text.gauge("tollgate_quota_limit_units", "The bucket's daily limit in units.", buckets) {
            ([("bucket", $0.bucket)], Double($0.limit))
        }
        text.gauge("tollgate_quota_remaining_units", "Units left today in the bucket (0 while the server says it is spent).",
                   buckets) { ([("bucket", $0.bucket)], Double($0.remaining)) }
        text.gauge("tollgate_quota_exhausted", "1 while the server's quota-exhausted answer blocks the bucket, else 0.",
                   buckets) { ([("bucket", $0.bucket)], $0.exhaustedUntil == nil ? 0 : 1) }
        let endpointUnits = buckets.flatMap { bucket in bucket.endpoints.map { (bucket: bucket.bucket, usage: $0) } }
        text.gauge("tollgate_quota_endpoint_used_units", "Units an endpoint used today in the bucket, net of refunds.",
                   endpointUnits) { ([("bucket", $0.bucket), ("endpoint", $0.usage.endpoint)], Double($0.usage.units)) }
        text.gauge("tollgate_quota_burn_rate_units_per_hour", "Net units charged to the bucket over the last hour.",
                   forecasts) { ([("bucket", $0.bucket)], $0.unitsPerHour) }
        let projected = forecasts.compactMap { forecast in forecast.secondsToExhaustion.map { (forecast.bucket, $0) } }
        text.gauge("tollgate_quota_exhaustion_forecast_seconds",
                   "Seconds until the bucket runs out at the last hour's burn rate (absent while nothing is spent).",
                   projected) { ([("bucket", $0.0)], $0.1.rounded()) }

        let circuits = snapshot.circuits
        let circuitStates = circuits.flatMap { circuit in CircuitState.allCases.map { (circuit: circuit, state: $0) } }
        text.gauge("tollgate_circuit_state", "1 for the state the endpoint's circuit is in, 0 for the others.",
                   circuitStates) {
            ([("endpoint", $0.circuit.endpoint), ("state", $0.state.rawValue)], $0.circuit.state == $0.state.rawValue ? 1 : 0)
        }
        text.gauge("tollgate_circuit_retry_seconds", "Seconds until an open circuit admits a probe.", circuits) {
            ([("endpoint", $0.endpoint)], Double($0.retryInSeconds))
        }
        text.gauge("tollgate_circuit_consecutive_failures", "Failures in a row counted by the endpoint's circuit.",
                   circuits) { ([("endpoint", $0.endpoint)], Double($0.consecutiveFailures)) }

        let throttles = snapshot.throttles
        text.gauge("tollgate_throttle_window_requests", "Requests in the endpoint's throttle window now.", throttles) {
            ([("endpoint", $0.endpoint)], Double($0.count))
        }
        text.gauge("tollgate_throttle_limit_requests", "Requests the endpoint's throttle admits per window.", throttles) {
            ([("endpoint", $0.endpoint)], Double($0.limit))
        }
        text.gauge("tollgate_throttle_remaining_requests", "Requests the endpoint's throttle window still admits.",
                   throttles) { ([("endpoint", $0.endpoint)], Double($0.remaining)) }
        text.gauge("tollgate_throttle_window_seconds", "The length of the endpoint's throttle window.", throttles) {
            ([("endpoint", $0.endpoint)], $0.windowSeconds)
        }

        text.gauge("tollgate_cache_entries", "Answers the cache holds.", value: Double(snapshot.cacheEntries))
        text.gauge("tollgate_cache_body_bytes", "Body bytes the cache holds.", value: Double(snapshot.cacheBodyBytes))
        let results = snapshot.cache.flatMap { day in
            [("hit", day.hits), ("revalidation", day.revalidations), ("miss", day.misses), ("stale", day.stale)]
                .map { (endpoint: day.endpoint, result: $0.0, count: $0.1) }
        }
        text.gauge("tollgate_cache_today_answers", "The cache's answers since the Pacific midnight, by result.", results) {
            ([("endpoint", $0.endpoint), ("result", $0.result)], Double($0.count))
        }
        let freshness = snapshot.freshness ?? []
        text.gauge("tollgate_freshness_seconds",
                   "Seconds a stored answer is served without asking (fresh_for), as in force now, and why.",
                   freshness) {
            ([("endpoint", $0.endpoint), ("bucket", $0.bucket), ("reason", $0.reason.rawValue)], $0.lifetimeSeconds)
        }
        return text.rendered
    }
}
