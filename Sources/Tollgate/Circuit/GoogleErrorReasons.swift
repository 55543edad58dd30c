import Foundation

/// Reads the `reason`s out of a Google API error body, in both of Google's formats.
///
/// ```json
/// {"error": {"code": 403, "errors": [{"domain": "youtube.quota", "reason": "quotaExceeded"}],
///            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED"}]}}
/// ```
///
/// The legacy `error.errors[].reason` carries `rateLimitExceeded`, `userRateLimitExceeded`,
/// `quotaExceeded`, `dailyLimitExceeded`; the newer `error.details[].reason` (google.rpc.ErrorInfo)
/// carries upper-case reasons. A body that is not such JSON has no reasons.
public enum GoogleErrorReasons {
    /// Google's reasons for "the daily quota is spent": a 403 with one of them marks the bucket
    /// exhausted until the Pacific reset, and is no circuit failure.
    public static let dailyQuotaSpent: Set<String> = ["quotaExceeded", "dailyLimitExceeded"]

    /// The largest body parsed: error bodies are small, and a huge body is not an error envelope.
    static let maximumBodySize = 64 * 1024

    /// The reasons in `body`, in document order.
    /// - Parameter body: A response body.
    /// - Returns: The reasons, or an empty array when the body is not a Google error.
    public static func reasons(in body: Data) -> [String] {
        guard !body.isEmpty, body.count <= maximumBodySize,
              let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let error = object["error"] as? [String: Any]
        else { return [] }
        var reasons: [String] = []
        for key in ["errors", "details"] {
            for item in error[key] as? [[String: Any]] ?? [] {
                if let reason = item["reason"] as? String { reasons.append(reason) }
            }
        }
        return reasons
    }
}
