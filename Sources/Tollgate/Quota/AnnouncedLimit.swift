import Foundation

/// What a server says is left of one of its limits, read from an answer's fields: the IETF
/// `RateLimit`/`RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers) and the vendor families
/// (`X-RateLimit-*` as GitHub and X send them, OpenAI's `x-ratelimit-*-requests`/`-tokens`,
/// Anthropic's `anthropic-ratelimit-*`), in one model.
///
/// ```swift
/// let limits = AnnouncedLimit.parse(response.headerFields, at: now)
/// // [AnnouncedLimit(policy: "core", unit: .requests, limit: 5000, remaining: 4987, resetsAt: …)]
/// ```
public struct AnnouncedLimit: Sendable, Hashable {
    /// What the limit counts.
    public enum Unit: String, Sendable, Hashable {
        /// Requests.
        case requests
        /// Tokens (LLM APIs), in and out together.
        case tokens
        /// Input tokens only.
        case inputTokens
        /// Output tokens only.
        case outputTokens
    }

    /// The server's name for the limit (`core`, `search`, the IETF policy's name); nil when it
    /// gives none.
    public var policy: String?
    /// What the limit counts.
    public var unit: Unit
    /// The limit, when the server says it.
    public var limit: Int?
    /// What is left of it.
    public var remaining: Int
    /// When it comes back in full, when the server says it.
    public var resetsAt: Date?
    /// The limit's window, when the server says it (`w` of the IETF policy).
    public var window: Duration?

    /// Creates an announcement.
    /// - Parameters:
    ///   - policy: The server's name for the limit.
    ///   - unit: What it counts.
    ///   - limit: The limit.
    ///   - remaining: What is left.
    ///   - resetsAt: When it comes back.
    ///   - window: Its window.
    public init(
        policy: String? = nil, unit: Unit = .requests, limit: Int? = nil, remaining: Int, resetsAt: Date? = nil,
        window: Duration? = nil
    ) {
        self.policy = policy
        self.unit = unit
        self.limit = limit
        self.remaining = remaining
        self.resetsAt = resetsAt
        self.window = window
    }
}
