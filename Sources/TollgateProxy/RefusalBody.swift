import Foundation

/// The JSON body of an answer the proxy gives itself (a refusal, a gate failure), shaped so that
/// the SDKs of the APIs it fronts read it as one of their own errors: `error` is an object with
/// `code`, `message` and `type`, as OpenAI's and Google's errors are (the openai SDK's
/// `RateLimitError.code` is `quota_exceeded`, its message the proxy's), and `message` is also at the
/// top, where GitHub's errors and PyGithub have it.
///
/// ```json
/// {"error":{"code":"quota_exceeded","message":"…","type":"tollgate"},"message":"…","retry_after":"120"}
/// ```
struct RefusalBody: Encodable {
    /// The error as OpenAI and Google write theirs.
    struct Detail: Encodable {
        /// What refused, in a word: `quota_exceeded`, `throttled`, `circuit_open`, `gate_failed`, …
        let code: String
        /// The sentence for a person.
        let message: String
        /// Always `tollgate`: the answer is the proxy's, not the API's.
        let type = "tollgate"
    }

    let error: Detail
    let message: String
    /// The seconds in `Retry-After`, when the answer has one.
    let retryAfter: String?

    enum CodingKeys: String, CodingKey {
        case error, message
        case retryAfter = "retry_after"
    }
}
