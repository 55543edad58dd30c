import Foundation
import Tollgate

extension Simulation {
    /// What the replay's answers and refusals add up to, as they come.
    struct Tally {
        let configuration: GateConfiguration
        var requests = 0
        var fromStore = 0
        var fromNetwork = 0
        var stale = 0
        var saved = SimulationResult.Savings()
        var refusals: [String: Int] = [:]
        var refusalsByEndpoint: [String: [String: Int]] = [:]
        var unitsByEndpoint: [String: (units: Int, requests: Int)] = [:]
        var runsOut: [String: Date] = [:]

        init(configuration: GateConfiguration) {
            self.configuration = configuration
        }

        private func cost(of endpoint: String) -> Int {
            configuration.quota.cost(for: endpoint)?.units ?? configuration.quota.effectiveCost(for: endpoint).units
        }

        mutating func count(_ answer: GateResponse, endpoint: String) {
            requests += 1
            unitsByEndpoint[endpoint, default: (0, 0)].units += answer.unitsCharged
            unitsByEndpoint[endpoint, default: (0, 0)].requests += 1
            let full = cost(of: endpoint)
            switch answer.source {
            case .network, .notCached:
                fromNetwork += 1
            case .revalidated:
                fromStore += 1
                saved.notModified += max(0, full - answer.unitsCharged)
            case .stale:
                stale += 1
                saved.stale += full
            case .coalesced:
                fromStore += 1
                saved.coalescing += full
            default:
                // Served from the store without asking: fresh by the server's word or the user's.
                fromStore += 1
                saved.cache += full
            }
        }

        mutating func count(_ error: GateFailure, endpoint: String, at now: Date) {
            requests += 1
            unitsByEndpoint[endpoint, default: (0, 0)].units += error.unitsCharged
            unitsByEndpoint[endpoint, default: (0, 0)].requests += 1
            let kind: String
            switch error.error {
            case TollgateError.quotaExceeded:
                kind = "quota_exceeded"
                let price = configuration.quota.cost(for: endpoint) ?? configuration.quota.effectiveCost(for: endpoint)
                for bucket in [price.bucket] + price.additionalCharges.map(\.bucket) where runsOut[bucket] == nil {
                    runsOut[bucket] = now
                }
            case TollgateError.throttled: kind = "throttled"
            case TollgateError.circuitOpen: kind = "circuit_open"
            default: kind = "failed"
            }
            refusals[kind, default: 0] += 1
            refusalsByEndpoint[endpoint, default: [:]][kind, default: 0] += 1
        }

        func result(api: String, gate: Gate, store: SQLiteStore, upstream: RecordedUpstream) async throws -> SimulationResult {
            let charged = try await store.read { db in
                try db.fetchAll(sql: "SELECT bucket, SUM(units) AS units FROM quota_events GROUP BY bucket").map { row in
                    (try row.decode(String.self, forColumn: "bucket"), try row.decode(Int.self, forColumn: "units"))
                }
            }
            var buckets: [String: SimulationResult.Bucket] = [:]
            for (bucket, limit) in configuration.quota.bucketLimits {
                let status = try await gate.quota.status(bucket: bucket)
                buckets[bucket] = SimulationResult.Bucket(
                    units: charged.first { $0.0 == bucket }?.1 ?? 0, limit: limit,
                    window: configuration.quota.window(of: bucket).specification, remainingAtEnd: status.remaining,
                    runsOutAt: runsOut[bucket]
                )
            }
            let answered = fromStore + fromNetwork
            let top = unitsByEndpoint.map { SimulationResult.EndpointUnits(endpoint: $0.key, units: $0.value.units, requests: $0.value.requests) }
                .sorted { ($0.units, $1.endpoint) > ($1.units, $0.endpoint) }
                .prefix(10)
            return SimulationResult(
                api: api, requests: requests, sent: upstream.sentRequests,
                units: buckets.values.reduce(0) { $0 + $1.units }, buckets: buckets, refusals: refusals,
                refusalsByEndpoint: refusalsByEndpoint, stale: stale,
                hitRate: answered == 0 ? nil : Double(fromStore) / Double(answered), saved: saved,
                topEndpoints: Array(top), unrecorded: upstream.unrecordedRequests, runsOutAt: runsOut.values.min()
            )
        }
    }
}
