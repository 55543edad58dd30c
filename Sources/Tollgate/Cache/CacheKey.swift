import Crypto
import Foundation
import HTTPTypes

/// Where a request's response is stored: the method, the normalised URL with its secrets
/// redacted, and a one-way hash of the request's credentials.
///
/// Pure computation, no storage. The URL is normalised so that equivalent requests share an
/// entry: scheme and host lowercased, the default port dropped, query parameters sorted by name (never
/// dropped). Sensitive query parameters, user information in the authority and sensitive headers
/// are taken out of the URL and hashed into ``credentialPartition``: two API keys never share an
/// entry, and no secret reaches the database in plaintext.
public struct CacheKey: Sendable, Hashable {
    /// What replaces the value of a sensitive query parameter in ``url``.
    public static let redactionMarker = "REDACTED"

    /// The request method, such as `GET`.
    public let method: String
    /// The normalised URL with every sensitive value replaced by ``redactionMarker``.
    public let url: String
    /// The hex SHA-256 of the request's credentials, or nil when it carries none.
    public let credentialPartition: String?
    /// The stored resource key: ``url``, a line feed, and the hex SHA-256 of ``method``, ``url``
    /// and ``credentialPartition`` (see `CacheResourceKey`).
    public let resourceKey: String
    /// The plaintext secrets of the request, kept in memory only, so the cache can scrub any echo
    /// of them from the response headers it stores.
    let secrets: [String]

    /// Computes the key of a request.
    /// - Parameters:
    ///   - request: The request.
    ///   - sensitiveQueryParameters: Query parameter names whose values are secrets (compared
    ///     case-insensitively, after percent-decoding).
    ///   - sensitiveHeaders: Request header fields whose values are secrets.
    /// - Throws: ``CacheError/unkeyableRequest(_:)`` when the request has no scheme, authority or
    ///   path to key on (a `CONNECT`, say).
    public init(
        request: HTTPRequest, sensitiveQueryParameters: Set<String>, sensitiveHeaders: Set<HTTPField.Name>
    ) throws(CacheError) {
        try self.init(request: request, secretRules: SecretRules(
            queryParameters: sensitiveQueryParameters, headers: sensitiveHeaders
        ))
    }

    /// Computes the key of a request with name patterns as well as exact names.
    /// - Parameters:
    ///   - request: The request.
    ///   - sensitiveQueryParameters: Query (and path) parameter names whose values are secrets.
    ///   - sensitiveQueryParameterPatterns: Patterns for more such names (`*_token`).
    ///   - sensitiveHeaders: Request header fields whose values are secrets.
    ///   - sensitiveHeaderPatterns: Patterns for more such fields (`*-token`, `*auth*`).
    /// - Throws: ``CacheError/unkeyableRequest(_:)`` when the request has no scheme, authority or path.
    public init(
        request: HTTPRequest,
        sensitiveQueryParameters: Set<String>, sensitiveQueryParameterPatterns: [SecretNamePattern],
        sensitiveHeaders: Set<HTTPField.Name>, sensitiveHeaderPatterns: [SecretNamePattern]
    ) throws(CacheError) {
        try self.init(request: request, secretRules: SecretRules(
            queryParameters: sensitiveQueryParameters, queryParameterPatterns: sensitiveQueryParameterPatterns,
            headers: sensitiveHeaders, headerPatterns: sensitiveHeaderPatterns
        ))
    }

    init(request: HTTPRequest, secretRules: SecretRules) throws(CacheError) {
        guard let scheme = request.scheme, let authority = request.authority, let rawPath = request.path else {
            throw CacheError.unkeyableRequest("the request has no scheme, authority or path")
        }
        var credentials: [String] = []
        var secrets: [String] = []
        let normalisedScheme = scheme.lowercased()

        // Authority: user information is a credential; host lowercased; default port dropped.
        var hostAndPort = Substring(authority)
        if let at = hostAndPort.unicodeScalars.lastIndex(of: "@") {
            let userInfo = String(Substring(hostAndPort.unicodeScalars[..<at]))
            credentials.append("userinfo=\(userInfo)")
            secrets.append(userInfo)
            hostAndPort = Substring(hostAndPort.unicodeScalars[hostAndPort.unicodeScalars.index(after: at)...])
        }
        let host: Substring
        var port: Substring?
        if hostAndPort.hasPrefix("["), let close = hostAndPort.firstIndex(of: "]") {
            host = hostAndPort[...close]
            let rest = hostAndPort[hostAndPort.index(after: close)...]
            port = rest.hasPrefix(":") ? rest.dropFirst() : nil
        } else if let colon = Self.lastColon(in: hostAndPort) {
            host = hostAndPort[..<colon]
            port = hostAndPort[hostAndPort.index(after: colon)...]
        } else {
            host = hostAndPort
        }
        var normalisedAuthority = host.lowercased()
        if let port, !port.isEmpty {
            let defaultPort: Int? = switch normalisedScheme {
            case "http", "ws": 80
            case "https", "wss": 443
            default: nil
            }
            if let number = Int(port), number >= 0 {
                if number != defaultPort { normalisedAuthority += ":\(number)" }
            } else {
                normalisedAuthority += ":\(port)"
            }
        }

        // Path and query: the fragment is never sent; parameters are sorted, secrets redacted.
        let target = Self.normalisedTarget(rawPath, secretRules: secretRules, credentials: &credentials, secrets: &secrets)

        // Header fields that can carry identity, by name and by pattern, every value of each, in
        // a fixed order so the partition does not depend on the order they were sent in.
        var identityFields: [(name: String, values: [String])] = []
        for field in request.headerFields where secretRules.isSecretHeader(field.name) {
            let name = field.name.canonicalName
            if let index = identityFields.firstIndex(where: { $0.name == name }) {
                identityFields[index].values.append(field.value)
            } else {
                identityFields.append((name, [field.value]))
            }
        }
        for (name, values) in identityFields.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
            credentials.append("header:\(name)=\(values.joined(separator: "\u{0}"))")
            secrets.append(contentsOf: values)
            // "Bearer <token>" and "Basic <credentials>": the token alone may be echoed too.
            secrets.append(contentsOf: values.compactMap { value in
                value.split(separator: " ", maxSplits: 1).dropFirst().first.map(String.init)
            })
        }

        self.method = request.method.rawValue
        self.url = "\(normalisedScheme)://\(normalisedAuthority)" + String(decoding: target, as: UTF8.self)
        self.credentialPartition = credentials.isEmpty
            ? nil : Self.digest("tollgate.cache.credentials.v1\n" + credentials.joined(separator: "\n"))
        self.resourceKey = CacheResourceKey.make(url: url, digest: Self.digest(
            "tollgate.cache.resource.v1\n\(method)\n\(url)\n\(credentialPartition ?? "")"
        ))
        self.secrets = secrets.filter { $0.utf8.count >= 8 }
    }

    /// The variant key of a request for a stored response's `Vary`: a digest of the request's
    /// values for each named field, or the empty string when `vary` names none.
    ///
    /// A field the request lacks differs from a field it sends empty. Values are compared after
    /// trimming and joining repeated fields with `, `, which keeps their meaning.
    /// - Parameters:
    ///   - request: The request.
    ///   - vary: Normalised field names (lowercased), as ``VaryFields/names(_:)`` gives them.
    /// - Returns: The variant key.
    public static func variantKey(for request: HTTPRequest, vary: [String]) -> String {
        guard !vary.isEmpty else { return "" }
        let parts = vary.map { name -> String in
            guard let fieldName = HTTPField.Name(name) else { return "\(name)\u{1}absent" }
            let values = request.headerFields[values: fieldName]
            guard !values.isEmpty else { return "\(name)\u{1}absent" }
            return "\(name)=\(VaryNormalisation.normalised(values, field: name))"
        }
        return digest("tollgate.cache.variant.v1\n" + parts.joined(separator: "\n"))
    }

    /// A parameter name as the secret rules compare it: percent-decoded and lowercased.
    static func decodedName(_ name: Substring) -> String {
        name.unicodeScalars.contains("%") ? (name.removingPercentEncoding ?? String(name)).lowercased() : name.lowercased()
    }

    /// Keeps a secret value, and its percent-decoded form, for scrubbing echoes from stored headers.
    static func collectSecret(_ value: String, into secrets: inout [String]) {
        secrets.append(value)
        if value.unicodeScalars.contains("%"), let decoded = value.removingPercentEncoding, decoded != value {
            secrets.append(decoded)
        }
    }

    /// Splits on a Unicode scalar, never on a `Character`: a separator followed by a combining mark
    /// (`&` + U+0301) or preceded by a prepend character is one grapheme with it, so splitting on
    /// Characters would miss that `&` — and a `key=` parameter behind it would escape redaction.
    static func split(_ text: Substring, on separator: Unicode.Scalar, maxSplits: Int = .max) -> [Substring] {
        text.unicodeScalars.split(separator: separator, maxSplits: maxSplits, omittingEmptySubsequences: false)
            .map { Substring($0) }
    }

    /// The last `:` of an authority. An ASCII one is searched byte by byte, where every character
    /// is one byte: searching by `Character` walks grapheme boundaries backwards, a tenth of a new
    /// URL's key in the store's profile. Any other is searched by `Character`, as it always was, so
    /// that its key stays the same.
    private static func lastColon(in authority: Substring) -> Substring.Index? {
        authority.isASCII
            ? authority.utf8.lastIndex(of: UInt8(ascii: ":")) : authority.lastIndex(of: ":")
    }

    /// The hex SHA-256 of a text's UTF-8.
    static func digest(_ text: String) -> String {
        var text = text
        let hash = text.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
        // The digest's bytes in place: iterating a digest copies it into an array first.
        return hash.withUnsafeBytes { bytes in
            String(unsafeUninitializedCapacity: 2 * SHA256.byteCount) { hex in
                var written = 0
                for byte in bytes {
                    hex[written] = hexDigits[Int(byte >> 4)]
                    hex[written + 1] = hexDigits[Int(byte & 0x0F)]
                    written += 2
                }
                return written
            }
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

/// What a response's `Vary` says about which requests it can answer.
public enum VaryFields: Sendable, Hashable {
    /// No `Vary`: every request for the resource matches.
    case none
    /// Requests match when their values for these fields (lowercased, sorted) are the same.
    case names([String])
    /// `Vary: *`: no later request ever matches, so the response is not stored.
    case any

    /// Reads the `Vary` fields of a response.
    /// - Parameter fields: The response's header fields.
    public init(_ fields: HTTPFields) {
        let names = fields[values: .vary]
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingOptionalWhitespace.lowercased() }
            .filter { !$0.isEmpty }
        if names.contains("*") {
            self = .any
        } else if names.isEmpty {
            self = .none
        } else {
            self = .names(Array(Set(names)).sorted())
        }
    }

    /// Reads the normalised `vary` column of a stored entry.
    /// - Parameter stored: The column, comma-separated names, or nil.
    public init(stored: String?) {
        let names = (stored ?? "").split(separator: ",").map { String($0.trimmingOptionalWhitespace) }
            .filter { !$0.isEmpty }
        self = names.isEmpty ? .none : (names.contains("*") ? .any : .names(names))
    }

    /// The field names, empty for ``none`` and ``any``.
    public var names: [String] {
        if case .names(let names) = self { names } else { [] }
    }

    /// The normalised text stored in the `vary` column; nil when there is no `Vary`.
    public var stored: String? {
        switch self {
        case .none: nil
        case .names(let names): names.joined(separator: ", ")
        case .any: "*"
        }
    }
}
