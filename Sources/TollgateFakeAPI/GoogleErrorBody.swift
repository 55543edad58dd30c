import Foundation

/// Error bodies in the format Google's APIs use (`{"error": {"code", "message", "errors": [{reason}]}}`).
enum GoogleErrorBody {
    /// Google's answer when a bucket is spent; the message names the method for the buckets that
    /// meter one method.
    static func quotaExceeded(bucket: String = "youtube") -> Data {
        let what = switch bucket {
        case "youtube.search": " for search.list"
        case "youtube.videos.insert": " for videos.insert"
        default: ""
        }
        return body(code: 403, reason: "quotaExceeded", domain: "youtube.quota",
                    message: "The request cannot be completed because you have exceeded your quota\(what).")
    }

    static func rateLimitExceeded() -> Data {
        body(code: 403, reason: "rateLimitExceeded", domain: "usageLimits",
             message: "The request cannot be completed because you have exceeded your rate limit.")
    }

    static func tooManyRequests() -> Data {
        body(code: 429, reason: "rateLimitExceeded", domain: "usageLimits", message: "Too many requests.")
    }

    static func backendError(status: Int) -> Data {
        body(code: status, reason: "backendError", domain: "global", message: "Backend Error")
    }

    static func notFound(path: String) -> Data {
        body(code: 404, reason: "notFound", domain: "global", message: "No resource at \(path).")
    }

    private static func body(code: Int, reason: String, domain: String, message: String) -> Data {
        let object: [String: Any] = [
            "error": [
                "code": code,
                "message": message,
                "errors": [["message": message, "domain": domain, "reason": reason]],
            ] as [String: Any],
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }
}
