import Foundation
import HTTPTypes
import Tollgate

/// `gate-send PATH NOW_MS URL ENDPOINT QUOTA_LIMIT THROTTLE_LIMIT`: sends one GET through a gate on
/// the file at the fixed time `NOW_MS` (YouTube costs, one bucket of `QUOTA_LIMIT` units,
/// `THROTTLE_LIMIT` requests a minute per endpoint, no throttle wait). Prints
/// `source SOURCE units UNITS status STATUS`, or `refused circuitOpen|throttled|quotaExceeded`.
enum GateSendJob {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 6, let nowMs = Int64(arguments[1]), let url = URL(string: arguments[2]),
              let quotaLimit = Int(arguments[4]), let throttleLimit = Int(arguments[5])
        else {
            throw StoreRefusal.invalidArgument("gate-send PATH NOW_MS URL ENDPOINT QUOTA_LIMIT THROTTLE_LIMIT")
        }
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.quota.bucketLimits[QuotaConfiguration.youTubeBucket] = quotaLimit
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: throttleLimit, per: .seconds(60)))
        configuration.maximumThrottleWait = .zero
        let gate = try Gate(
            store: try SQLiteStore(path: arguments[0]),
            transport: URLSessionTransport(timeout: .seconds(10)),
            configuration: configuration,
            clock: ManualClock(now: Date(timeIntervalSince1970: TimeInterval(nowMs) / 1000))
        )
        do {
            let answer = try await gate.send(HTTPRequest(url: url), endpoint: arguments[3])
            try await gate.flush()
            print("source \(answer.source) units \(answer.unitsCharged) status \(answer.status.code)")
        } catch let refusal as TollgateError {
            switch refusal {
            case .circuitOpen: print("refused circuitOpen")
            case .throttled: print("refused throttled")
            case .quotaExceeded: print("refused quotaExceeded")
            }
        }
    }
}
