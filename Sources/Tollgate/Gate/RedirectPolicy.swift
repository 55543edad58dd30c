import Foundation
import HTTPTypes

/// Which redirects the gate follows. Transports follow none themselves: the gate sees every
/// `3xx` and decides here, so a `Location` can never carry the caller's credentials to another host
/// behind its back.
///
/// - A **same-origin** redirect (same scheme, host and port) is followed, up to
///   ``maximumRedirects`` hops, each hop a request of its own through the gate: cache, circuit,
///   throttle and quota.
/// - A **cross-origin** redirect is returned to the caller as it is, like curl without `-L`,
///   unless ``followsCrossOrigin`` is set. Then the hop, and every hop after it, carries none of the
///   caller's credentials: no header field the cache treats as sensitive (`Authorization`,
///   `Cookie`, `X-Goog-Api-Key`, `*-token`…), no secret query or path parameter (`key=`…) and no
///   request body (a redirect that would resend one is returned as it is), which is curl's rule for
///   `--location` made stricter. A hop to another origin is not the endpoint's call: it is charged
///   nothing and counted under an endpoint of its own, `redirect HOST`.
///
/// A hop back to a request already made in the same send (the same method and URL: `/a` → `/a`,
/// or `/a` → `/b` → `/a`) is a loop: the redirect is returned as it is, and nothing more is spent.
///
/// Every answer is stored only under the URL that produced it.
public struct RedirectPolicy: Sendable, Hashable {
    /// The most hops followed for one request; past it the last redirect is returned as it is.
    /// Zero returns every redirect as it is.
    public var maximumRedirects: Int
    /// Whether a redirect to another origin is followed (stripped of credentials).
    public var followsCrossOrigin: Bool

    /// Creates a policy.
    /// - Parameters:
    ///   - maximumRedirects: The most hops followed, 5 by default.
    ///   - followsCrossOrigin: Whether redirects to another origin are followed, without
    ///     credentials. False by default.
    public init(maximumRedirects: Int = 5, followsCrossOrigin: Bool = false) {
        self.maximumRedirects = max(0, maximumRedirects)
        self.followsCrossOrigin = followsCrossOrigin
    }

    /// Same-origin redirects followed, up to 5 hops; cross-origin ones returned as they are.
    public static let sameOrigin = RedirectPolicy()
    /// Every redirect returned to the caller as it is.
    public static let never = RedirectPolicy(maximumRedirects: 0)
    /// Every redirect followed, up to 5 hops; hops to another origin carry no credentials.
    public static let stripCredentialsAcrossOrigins = RedirectPolicy(followsCrossOrigin: true)
}

/// One hop of a redirect chain: the request to send next, worked out from a `3xx` answer. Pure.
struct RedirectHop: Sendable, Hashable {
    /// The next request.
    var request: HTTPRequest
    /// Its body (nil when the method became `GET`).
    var body: Data?
    /// Whether this hop, or an earlier one, left the original origin.
    var crossedOrigin: Bool

    /// The statuses whose `Location` names where the resource is (RFC 9110 §15.4).
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// What identifies a request within one send's redirect chain: its method, origin, path and
    /// query. A hop whose visit was already made in the same send is a loop.
    static func visit(_ request: HTTPRequest) -> String {
        guard let url = request.url else { return "\(request.method.rawValue) \(request.authority ?? "")\(request.path ?? "")" }
        return "\(request.method.rawValue) \(origin(of: url))\(request.path ?? "")"
    }

    /// The next hop after `response`, or nil when the policy returns the answer as it is.
    /// - Parameters:
    ///   - response: The answer to the current hop.
    ///   - request: The current hop's request.
    ///   - body: The current hop's body.
    ///   - hopsSoFar: Hops already followed.
    ///   - alreadyCrossed: Whether an earlier hop left the original origin.
    ///   - policy: The redirect policy.
    ///   - secrets: Which header fields and parameters are credentials.
    static func next(
        after response: HTTPResponse, to request: HTTPRequest, body: Data?, hopsSoFar: Int, alreadyCrossed: Bool,
        policy: RedirectPolicy, secrets: CacheKey.SecretRules
    ) -> RedirectHop? {
        guard redirectStatuses.contains(response.status.code), hopsSoFar < policy.maximumRedirects,
              let location = response.headerFields[.location], let current = request.url,
              let target = URL(string: location, relativeTo: current)?.absoluteURL,
              let scheme = target.scheme?.lowercased(), ["http", "https"].contains(scheme), target.host != nil
        else { return nil }
        let crossesOrigin = origin(of: target) != origin(of: current)
        guard !crossesOrigin || policy.followsCrossOrigin else { return nil }
        var next = HTTPRequest(url: target)
        next.method = request.method
        next.headerFields = request.headerFields
        var nextBody = body
        // 303 always becomes GET; 301 and 302 turn a POST into a GET, as every browser and curl do.
        let status = response.status.code
        if (status == 303 && request.method != .head) || ((status == 301 || status == 302) && request.method == .post) {
            next.method = .get
            nextBody = nil
            next.headerFields[.contentType] = nil
            next.headerFields[.contentLength] = nil
        }
        let crossed = alreadyCrossed || crossesOrigin
        // A body can carry credentials too (`client_secret=…` in a form): it never leaves for
        // another origin. Such a redirect is returned as it is.
        if crossed, let nextBody, !nextBody.isEmpty { return nil }
        if crossed {
            next = strippingCredentials(from: next, secrets: secrets)
        }
        return RedirectHop(request: next, body: nextBody, crossedOrigin: crossed)
    }

    /// `request` without any header field or query or path parameter that can carry a credential,
    /// and without user information in its authority.
    static func strippingCredentials(from request: HTTPRequest, secrets: CacheKey.SecretRules) -> HTTPRequest {
        var stripped = request
        stripped.headerFields = HTTPFields(request.headerFields.filter { !secrets.isSecretHeader($0.name) })
        if let authority = stripped.authority, let at = authority.lastIndex(of: "@") {
            stripped.authority = String(authority[authority.index(after: at)...])
        }
        guard let path = stripped.path else { return stripped }
        let parts = CacheKey.split(Substring(path), on: "?", maxSplits: 1)
        let keepsParameter = { (parameter: Substring) -> Bool in
            let name = CacheKey.split(parameter, on: "=", maxSplits: 1)[0]
            return !secrets.isSecretParameter(CacheKey.decodedName(name))
        }
        let cleanPath = CacheKey.split(parts[0], on: "/").map { segment in
            CacheKey.split(segment, on: ";").enumerated()
                .filter { $0.offset == 0 || keepsParameter($0.element) }.map { String($0.element) }
                .joined(separator: ";")
        }.joined(separator: "/")
        var rebuilt = cleanPath
        if parts.count == 2 {
            let kept = CacheKey.split(parts[1], on: "&").filter { !$0.isEmpty && keepsParameter($0) }
            if !kept.isEmpty { rebuilt += "?" + kept.joined(separator: "&") }
        }
        stripped.path = rebuilt
        return stripped
    }

    /// Scheme, host and port, as RFC 6454 compares origins.
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }
}
