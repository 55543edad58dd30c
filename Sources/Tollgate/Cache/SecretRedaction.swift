import Foundation
import HTTPTypes

/// What the cache does to secrets, for anything else that writes requests down (a recorded HAR
/// file, a report): the URL as the cache stores it, and header fields without credentials.
///
/// ```swift
/// let redaction = SecretRedaction(gate.configuration.cache)
/// let written = redaction.url(of: request)          // https://api…/v?key=REDACTED&id=1
/// let fields = redaction.requestFields(request.headerFields)  // no Authorization, no X-Api-Key
/// ```
public struct SecretRedaction: Sendable {
    private let rules: CacheKey.SecretRules

    /// Redaction by a cache configuration's secret names.
    /// - Parameter configuration: The cache's configuration (its secret parameters and headers).
    public init(_ configuration: CacheConfiguration) {
        rules = CacheKey.SecretRules(configuration)
    }

    /// The request's URL as the cache keys it: query and path parameters that are secrets replaced by
    /// ``CacheKey/redactionMarker``, user information taken out; nil for a request with no URL.
    /// - Parameter request: The request.
    /// - Returns: The redacted URL.
    public func url(of request: HTTPRequest) -> String? {
        (try? CacheKey(request: request, secretRules: rules))?.url
    }

    /// The secrets `request` carries (its credential headers' and secret parameters' values),
    /// kept in memory only, to scrub their echoes from anything written.
    /// - Parameter request: The request.
    /// - Returns: The secret values.
    public func secrets(of request: HTTPRequest) -> [String] {
        (try? CacheKey(request: request, secretRules: rules))?.secrets ?? []
    }

    /// Request fields without those that carry credentials.
    /// - Parameter fields: A request's fields.
    /// - Returns: The fields that may be written down.
    public func requestFields(_ fields: HTTPFields) -> HTTPFields {
        HTTPFields(fields.filter { !rules.isSecretHeader($0.name) })
    }

    /// Response fields as the cache stores them: no `Set-Cookie`, no credential fields, and any echo
    /// of `secrets` scrubbed.
    /// - Parameters:
    ///   - fields: A response's fields.
    ///   - secrets: The request's secrets (``secrets(of:)``).
    /// - Returns: The fields that may be written down.
    public func responseFields(_ fields: HTTPFields, secrets: [String]) -> HTTPFields {
        HTTPFields(CacheHeaders.storableFields(fields, rules: rules, secrets: secrets).parsed)
    }
}
