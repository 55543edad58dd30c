import Foundation
import Tollgate

/// `throttle-admit PATH NOW_MS LIMIT COUNT`: asks `COUNT` times to admit a request to one endpoint
/// limited to `LIMIT` requests an hour, at the fixed time `NOW_MS`. Prints `allowed A refused R`.
enum ThrottleAdmitJob {
    static let endpoint = "/api/shared"

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 4, let nowMs = Int64(arguments[1]), let limit = Int(arguments[2]),
              let count = Int(arguments[3])
        else {
            throw StoreRefusal.invalidArgument("throttle-admit PATH NOW_MS LIMIT COUNT")
        }
        let store = try SQLiteStore(path: arguments[0])
        let throttler = try RequestThrottler(
            storage: store,
            configuration: ThrottleConfiguration(endpointLimits: [endpoint: ThrottleLimit(requests: limit, per: .seconds(3600))]),
            clock: ManualClock(now: Date(timeIntervalSince1970: TimeInterval(nowMs) / 1000))
        )
        var allowed = 0
        var refused = 0
        for _ in 0..<count {
            if try await throttler.shouldAllowRequest(endpoint: endpoint).allowed { allowed += 1 } else { refused += 1 }
        }
        print("allowed \(allowed) refused \(refused)")
    }
}
