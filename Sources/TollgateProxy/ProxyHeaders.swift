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

    /// `Accept-Encoding` with only the codings in `supported` left (and `identity`), or removed
    /// when none is: an endpoint whose cost is read from its body must get a body the gate can
    /// decode. q-values are kept as the client wrote them.
    /// - Parameters:
    ///   - fields: A request's fields.
    ///   - supported: The codings the gate can undo, lowercased.
    static func limitAcceptEncoding(_ fields: inout HTTPFields, to supported: [String]) {
        let offered = fields[values: .acceptEncoding].flatMap { $0.split(separator: ",") }
        guard !offered.isEmpty else { return }
        let kept = offered.map { $0.trimmingCharacters(in: .whitespaces) }.filter { coding in
            let name = coding.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
            return supported.contains(name) || name == "identity"
        }
        fields[.acceptEncoding] = nil
        if !kept.isEmpty { fields[.acceptEncoding] = kept.joined(separator: ", ") }
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
