import Foundation
import HTTPTypes

/// Points links to the upstream back at the proxy, so that a client following them — pagination
/// (`Link: <…>; rel="next"`), a redirect, a resource's `url` in its JSON — comes back through the
/// gate instead of going around it. Pure: a value made per request from the upstream's URL and the
/// authority the client addressed (its `Host`), working on bytes.
///
/// A URL is rewritten when it names the upstream's origin (scheme, host compared without case, and
/// port, the scheme's default when none is written) and a path at or under the upstream's base path:
/// it becomes the same path, less the base path, under `http://` and the client's authority, with its
/// query, fragment and any URI-template expression (`{/number}`) intact. So with `--upstream
/// https://ghe.example.com/api/v3` mounted at the proxy's root, `https://ghe.example.com/api/v3/repos/o/r?page=2`
/// becomes `http://127.0.0.1:8080/repos/o/r?page=2`, while `https://ghe.example.com/login` — outside the
/// base path, which the proxy cannot reach — is left as it is, as is every other origin, byte for
/// byte. A URL with userinfo, or with a `.` or `..` segment, is left alone too: the proxy would not
/// send it where the upstream meant.
///
/// In header fields (`Link`, every URI reference in it, its `anchor` too; `Location`;
/// `Content-Location`) absolute URLs, network-path references (`//host/…`) and, under a base path,
/// absolute-path references (`/api/v3/…`, which a client resolves against the proxy's origin) are
/// rewritten; relative ones resolve the same way against either origin and are left alone. In JSON
/// bodies only string values that are absolute URLs are rewritten (``rewrittenJSON(_:)``).
struct UpstreamLinkRewriter: Sendable {
    /// The upstream's scheme, lowercased.
    let upstreamScheme: [UInt8]
    /// The upstream's host, lowercased, an IPv6 literal in brackets.
    let upstreamHost: [UInt8]
    /// The upstream's port, its scheme's default when the URL writes none.
    let upstreamPort: Int
    /// The upstream URL's path as written (percent-encoded), without a trailing `/`; empty at the root.
    let basePath: [UInt8]
    /// `http://` and the authority the client addressed the proxy by.
    let proxyOrigin: [UInt8]
    /// `//` and the authority the client addressed, for network-path references.
    let proxyNetworkPath: [UInt8]

    /// The longest `Host` taken: a host name's 253 characters, brackets and a port.
    static let maximumAuthorityLength = 270

    /// The upstream as links are compared with it, worked out once per proxy.
    struct Upstream: Sendable {
        /// The scheme, lowercased.
        let scheme: [UInt8]
        /// The host, lowercased, an IPv6 literal in brackets.
        let host: [UInt8]
        /// The port, the scheme's default when the URL writes none.
        let port: Int
        /// The path as written (percent-encoded), without a trailing `/`; empty at the root.
        let basePath: [UInt8]

        /// The upstream of `url`, or nil when it is not an http(s) URL with a host.
        /// - Parameter url: The upstream's base URL.
        init?(_ url: URL) {
            guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty,
                  let defaultPort = UpstreamLinkRewriter.defaultPort(of: Array(scheme.utf8))
            else { return nil }
            self.scheme = Array(scheme.utf8)
            self.host = Array((host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host).utf8)
            port = url.port ?? defaultPort
            var path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? url.path
            while path.hasSuffix("/") { path.removeLast() }
            basePath = Array(path.utf8)
        }
    }

    /// A rewriter for one request, or nil when the client's authority is missing (HTTP/1.0 without
    /// `Host`) or is not a plain `host[:port]`: links are then passed on as the upstream sent them.
    /// - Parameters:
    ///   - upstream: The upstream, as ``Upstream`` works it out once; nil rewrites nothing.
    ///   - clientAuthority: The `Host` the client sent (the request's authority).
    init?(upstream: Upstream?, clientAuthority: String?) {
        guard let upstream, let clientAuthority, Self.isPlainAuthority(clientAuthority) else { return nil }
        upstreamScheme = upstream.scheme
        upstreamHost = upstream.host
        upstreamPort = upstream.port
        basePath = upstream.basePath
        proxyOrigin = Array("http://\(clientAuthority)".utf8)
        proxyNetworkPath = Array("//\(clientAuthority)".utf8)
    }

    /// ``init(upstream:clientAuthority:)`` from the upstream's URL.
    init?(upstream: URL, clientAuthority: String?) {
        self.init(upstream: Upstream(upstream), clientAuthority: clientAuthority)
    }

    /// Whether `authority` is a `host[:port]` that can be written into a URL as it is: letters,
    /// digits, `-._~%`, and an IPv6 literal's `[`, `]` and `:`. Anything else (spaces, quotes, `<`,
    /// `>`, `,`, `;`, `@`, `/`) could change the meaning of the field or body it is written into.
    static func isPlainAuthority(_ authority: String) -> Bool {
        guard !authority.isEmpty, authority.utf8.count <= maximumAuthorityLength else { return false }
        return authority.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"),
                 UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: ":"):
                true
            default:
                false
            }
        }
    }

    static func defaultPort(of scheme: [UInt8]) -> Int? {
        switch scheme {
        case Array("http".utf8): 80
        case Array("https".utf8): 443
        default: nil
        }
    }

    /// Which references a context may rewrite.
    enum References {
        /// Header fields: absolute URLs, network-path and absolute-path references.
        case header
        /// JSON string values: absolute URLs only; a bare path in a body is data, not a link.
        case body
    }

    /// The reference pointed at the proxy, or nil when it stays as it is.
    /// - Parameters:
    ///   - reference: A URI reference's bytes (a URL, `//host/path`, `/path`, …).
    ///   - references: Which forms may be rewritten.
    /// - Returns: The rewritten reference, or nil.
    func proxied(_ reference: ArraySlice<UInt8>, _ references: References) -> [UInt8]? {
        let slash = UInt8(ascii: "/")
        if let afterScheme = schemeEnd(of: reference) {
            // scheme "://" authority …
            let scheme = reference[reference.startIndex..<afterScheme - 1].map(Self.lowercased)
            guard scheme == upstreamScheme, reference[afterScheme...].starts(with: [slash, slash]) else { return nil }
            return mapped(afterAuthorityMarker: reference[(afterScheme + 2)...], origin: proxyOrigin)
        }
        guard references == .header, reference.first == slash else { return nil }
        if reference.dropFirst().first == slash {
            return mapped(afterAuthorityMarker: reference.dropFirst(2), origin: proxyNetworkPath)
        }
        // An absolute-path reference resolves against the proxy's origin already: only a base
        // path, which the proxy adds itself, has to come off.
        guard !basePath.isEmpty, let remainder = underBasePath(reference), !Self.hasDotSegment(remainder) else { return nil }
        return remainder.isEmpty || Self.pathEnds(remainder.first!) ? [slash] + remainder : Array(remainder)
    }

    /// The index just past a reference's `scheme:`, or nil when it has none (RFC 3986 §3.1).
    private func schemeEnd(of reference: ArraySlice<UInt8>) -> Int? {
        var index = reference.startIndex
        guard index < reference.endIndex, Self.isLetter(reference[index]) else { return nil }
        while index < reference.endIndex {
            let byte = reference[index]
            if byte == UInt8(ascii: ":") { return index + 1 }
            guard Self.isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            else { return nil }
            index += 1
        }
        return nil
    }

    /// Given what follows `//`: the rewritten reference when the authority is the upstream's and
    /// the path is under its base path, else nil.
    private func mapped(afterAuthorityMarker rest: ArraySlice<UInt8>, origin: [UInt8]) -> [UInt8]? {
        let authorityEnd = rest.firstIndex { byte in
            byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "{")
        } ?? rest.endIndex
        guard isUpstream(authority: rest[rest.startIndex..<authorityEnd]) else { return nil }
        let pathAndRest = rest[authorityEnd...]
        guard let remainder = basePath.isEmpty ? pathAndRest : underBasePath(pathAndRest) else { return nil }
        guard !Self.hasDotSegment(remainder) else { return nil }
        return origin + remainder
    }

    /// Whether `authority` (`host[:port]`, no userinfo) is the upstream's.
    private func isUpstream(authority: ArraySlice<UInt8>) -> Bool {
        guard !authority.contains(UInt8(ascii: "@")) else { return false }
        var host = authority
        var port: ArraySlice<UInt8> = []
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return false }
            host = authority[...close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return false }
                port = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            host = authority[..<colon]
            port = authority[(colon + 1)...]
        }
        guard host.count == upstreamHost.count, zip(host, upstreamHost).allSatisfy({ Self.lowercased($0) == $1 })
        else { return false }
        if port.isEmpty { return upstreamPort == Self.defaultPort(of: upstreamScheme) }
        // At most five digits: a port written with more is not the upstream's, and is never converted.
        guard port.count <= 5, port.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return false }
        return Int(String(decoding: port, as: UTF8.self)) == upstreamPort
    }

    /// What follows the base path in `path` (which starts at a path, `/…`), or nil when the path is
    /// not the base path or under it.
    private func underBasePath(_ path: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard path.starts(with: basePath) else { return nil }
        let remainder = path.dropFirst(basePath.count)
        guard let next = remainder.first else { return remainder }
        return Self.pathEnds(next) || next == UInt8(ascii: "/") ? remainder : nil
    }

    /// Whether a `.` or `..` segment (`%2E` counting as `.`) is in the path part of `remainder`.
    private static func hasDotSegment(_ remainder: ArraySlice<UInt8>) -> Bool {
        let pathEnd = remainder.firstIndex(where: pathEnds) ?? remainder.endIndex
        for segment in remainder[..<pathEnd].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            let text = String(decoding: segment, as: UTF8.self).lowercased().replacingOccurrences(of: "%2e", with: ".")
            if text == "." || text == ".." { return true }
        }
        return false
    }

    /// `?`, `#` or `{` (a URI template's expression): where a path ends.
    private static func pathEnds(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "{")
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}
