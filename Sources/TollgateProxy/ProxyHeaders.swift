import Foundation
import HTTPTypes

/// The header rules of a reverse proxy (RFC 9110 §7.6.1): hop-by-hop fields describe one
/// connection and are never forwarded, in either direction.
enum ProxyHeaders {
    /// The fields that always describe one connection only.
    static let hopByHop: Set<HTTPField.Name> = [
        .connection, .proxyAuthenticate, .proxyAuthorization, .te, .trailer, .transferEncoding, .upgrade,
        HTTPField.Name("Keep-Alive")!, HTTPField.Name("Proxy-Connection")!,
    ]

    /// `fields` without hop-by-hop fields, without the fields the `Connection` field names, and
    /// without `dropping`.
    static func forwardable(_ fields: HTTPFields, dropping: Set<HTTPField.Name> = []) -> HTTPFields {
        var named = hopByHop.union(dropping)
        for value in fields[values: .connection] {
            for token in value.split(separator: ",") {
                if let name = HTTPField.Name(token.trimmingCharacters(in: .whitespaces)) { named.insert(name) }
            }
        }
        return HTTPFields(fields.filter { !named.contains($0.name) })
    }

    /// Fields set by the proxy on its answers.
    static let source = HTTPField.Name("X-Tollgate-Source")!
    static let units = HTTPField.Name("X-Tollgate-Units")!
    static let endpoint = HTTPField.Name("X-Tollgate-Endpoint")!
    /// Carries the upstream's `Date` past Hummingbird, which stamps its own; never sent to a
    /// client (see `UpstreamDateRestorer`).
    static let upstreamDate = HTTPField.Name("X-Tollgate-Upstream-Date")!
    /// `Host`: HTTP/1 clients send it; the upstream request's authority replaces it.
    static let host = HTTPField.Name("Host")!
}
