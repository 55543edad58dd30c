import Foundation
import HTTPTypes
import RawStructuredFieldValues
import Tollgate

/// The `RateLimit-Policy` and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers) the proxy
/// adds to its answers, so that a client can pace itself before the gate refuses it:
///
/// ```
/// RateLimit-Policy: "youtube";q=10000;w=86400, "throttle";q=30;w=60
/// RateLimit: "youtube";r=9940;t=25310, "throttle";r=28;t=60
/// ```
///
/// One daily policy per bucket the endpoint is charged in (`q` its limit, `w` a day) with `r` the
/// units left and `t` the seconds to the Pacific reset, and the endpoint's throttle window as a
/// second policy (`r` the requests it still admits; `t` the window, an upper bound for a sliding
/// window, or the wait when it is full).
///
/// They are computed from what this request's admission read (``QuotaLedger/latestReading(of:)``,
/// ``RequestThrottler/latestReading(of:)``), with what the answer's settlement will do applied
/// (``QuotaLedger/anticipate(_:returning:to:)``: a `304`'s refund, GitHub's reset and remaining):
/// no store read on the answer's path. A request admitted at the same time in another process is
/// not counted until this process's next admission.
enum RateLimitFields {
    static let policy = HTTPField.Name("RateLimit-Policy")!
    static let rateLimit = HTTPField.Name("RateLimit")!
    /// The name of the throttle's policy.
    static let throttlePolicy = "throttle"

    /// A window's length for the policy's `w`: a Pacific day is 86,400 s, as YouTube's quota page
    /// counts it, whatever its 23 or 25 hours.
    static func windowSeconds(_ window: QuotaWindow, at now: Date) -> Int64 {
        switch window {
        case .day: 86_400
        case .hour: 3_600
        case .minute: 60
        case .month:
            Int64(window.naturalPeriod(containing: now).length)
        case .rolling(let seconds): Int64(seconds)
        }
    }

    /// The two fields for an answer to `endpoint`, or nil when this process has read none of its
    /// limits yet.
    /// - Parameters:
    ///   - gate: The gate whose services hold the readings.
    ///   - endpoint: The endpoint answered.
    ///   - now: The current time, for the seconds to the reset.
    /// - Returns: `RateLimit-Policy` and `RateLimit`.
    static func fields(gate: Gate, endpoint: String, now: Date) -> (policy: String, limit: String)? {
        var policies: [ItemOrInnerList] = []
        var limits: [ItemOrInnerList] = []
        let price = gate.quota.price(of: endpoint)
        for charge in price.charges {
            // A reading of a window that has ended says nothing of the one in force.
            guard let reading = gate.quota.latestReading(of: charge.bucket), reading.period.end > now else { continue }
            let window = gate.quota.configuration.window(of: charge.bucket)
            let length = windowSeconds(window, at: now)
            // The ledger keeps no reset further than one window past the natural end; the relayed
            // `t` is held to that too, whatever a server once said.
            let secondsToReset = SaturatingConversion.int64(reading.resetsAt.timeIntervalSince(now).rounded(.up))
            policies.append(item(charge.bucket, ["q": Int64(reading.limit), "w": length]))
            limits.append(item(charge.bucket, [
                "r": Int64(max(0, reading.remaining)), "t": min(max(0, secondsToReset), 2 * length),
            ]))
        }
        if let window = gate.throttle.latestReading(of: endpoint) {
            let windowSeconds = Int64(max(1, window.limit.window.timeInterval.rounded(.up)))
            policies.append(item(throttlePolicy, ["q": Int64(window.limit.requests), "w": windowSeconds]))
            let reset = window.retryAfter.map { Int64(max(0, $0.rounded(.up))) } ?? windowSeconds
            limits.append(item(throttlePolicy, ["r": Int64(window.remaining), "t": reset]))
        }
        guard !policies.isEmpty else { return nil }
        var serializer = StructuredFieldValueSerializer()
        guard let policy = try? serializer.writeListFieldValue(policies),
              let limit = try? serializer.writeListFieldValue(limits) else { return nil }
        return (String(decoding: policy, as: UTF8.self), String(decoding: limit, as: UTF8.self))
    }

    private static func item(_ name: String, _ parameters: KeyValuePairs<String, Int64>) -> ItemOrInnerList {
        var map = OrderedMap<String, RFC9651BareItem>()
        for (key, value) in parameters { map[key] = .integer(value) }
        return .item(Item(bareItem: .string(name), parameters: map))
    }
}
