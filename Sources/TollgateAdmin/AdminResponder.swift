import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Tollgate
import NIOCore

/// Answers the operators' listener's requests: `/metrics`, `/` (the web dashboard), `/fragment`
/// (its refreshed content) and `/api/snapshot`. Every answer is read from the store at the
/// request; nothing is written.
struct AdminResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let exposition: MetricsExposition
    let databaseName: String
    let token: String?
    let refreshSeconds: Int
    /// The host the listener binds to when that is loopback: then only loopback names are
    /// answered. Nil off loopback, where the token guards every request.
    let loopbackOnly: String?
    let logger: Logger

    func respond(to request: Request, context: Context) async throws -> Response {
        guard isAddressedToLoopback(request) else {
            // A DNS-rebinding page reaches 127.0.0.1 under its own name: answer it nothing.
            return text(.misdirectedRequest, "This listener answers only requests addressed to this machine (Host: localhost or 127.0.0.1).\n")
        }
        guard request.method == .get || request.method == .head else {
            var answer = text(.methodNotAllowed, "Only GET and HEAD are served here.\n")
            answer.headers[.allow] = "GET, HEAD"
            return answer
        }
        guard isAuthorised(request) else {
            var answer = text(.unauthorized, "A token is required: Authorization: Bearer TOKEN, or ?token=TOKEN.\n")
            answer.headers[.wwwAuthenticate] = #"Bearer realm="tollgate""#
            return answer
        }
        switch request.uri.path {
        case "/metrics":
            return answer(.ok, contentType: MetricsExposition.contentType, body: Data(await exposition.render().utf8))
        case "/", "/index.html":
            return try await dashboard(fragmentOnly: false)
        case "/fragment":
            return try await dashboard(fragmentOnly: true)
        case "/api/snapshot":
            do {
                let snapshot = try await exposition.reader.read()
                return answer(.ok, contentType: "application/json", body: try Self.encoder.encode(snapshot))
            } catch {
                return storeFailure(error)
            }
        default:
            return text(.notFound, "Not found. This listener serves /, /metrics and /api/snapshot.\n")
        }
    }

    private func dashboard(fragmentOnly: Bool) async throws -> Response {
        let snapshot: OperatorsSnapshot
        do {
            snapshot = try await exposition.reader.read()
        } catch {
            return storeFailure(error)
        }
        let nonce = Self.nonce()
        let html = fragmentOnly
            ? DashboardPage.fragment(snapshot, databaseName: databaseName)
            : DashboardPage.page(snapshot, databaseName: databaseName, refreshSeconds: refreshSeconds, nonce: nonce)
        var response = answer(.ok, contentType: "text/html; charset=utf-8", body: Data(html.utf8))
        // Nothing leaves the page: no other origin, no inline code but the page's own script.
        response.headers[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'none'; script-src 'nonce-\(nonce)'; style-src 'nonce-\(nonce)'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'"
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return response
    }

    private func storeFailure(_ error: any Error) -> Response {
        logger.warning("the admin listener could not read the store", metadata: ["error": "\(error)"])
        return text(.serviceUnavailable, "The store could not be read: \(error)\n")
    }

    /// Whether the request carries the token, when there is one: `Authorization: Bearer TOKEN`
    /// (Prometheus's `authorization` scrape setting) or `?token=TOKEN` (a browser's address bar).
    /// Exactly one token: a request offering several (`?token=a&token=b…`) is refused, so one
    /// request cannot try thousands of guesses.
    private func isAuthorised(_ request: Request) -> Bool {
        guard let token else { return true }
        var offered: [String] = []
        for authorization in request.headers[values: .authorization] where authorization.lowercased().hasPrefix("bearer ") {
            offered.append(String(authorization.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces))
        }
        if let query = request.uri.query {
            for pair in query.split(separator: "&") where pair.hasPrefix("token=") {
                offered.append(String(pair.dropFirst("token=".count)).removingPercentEncoding ?? "")
            }
        }
        guard offered.count == 1, let candidate = offered.first else { return false }
        return Self.constantTimeEqual(candidate, token)
    }

    /// Whether a loopback listener's request names a loopback host (or the bound host) in `Host`.
    private func isAddressedToLoopback(_ request: Request) -> Bool {
        guard let bound = loopbackOnly else { return true }
        guard let authority = request.head.authority else { return true }
        let host = Self.hostName(ofAuthority: authority)
        return host == bound.lowercased() || HostAndPort.isLoopback(host)
    }

    /// The host of `host[:port]` or `[v6]:port`, lowercased, without brackets.
    static func hostName(ofAuthority authority: String) -> String {
        let lowered = authority.lowercased()
        if lowered.hasPrefix("["), let close = lowered.firstIndex(of: "]") {
            return String(lowered[lowered.index(after: lowered.startIndex)..<close])
        }
        return String(lowered.prefix { $0 != ":" })
    }

    static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        // Compare digests so neither the length nor the first difference shows in the timing.
        let left = SHA256.hash(data: Data(lhs.utf8)), right = SHA256.hash(data: Data(rhs.utf8))
        return zip(left, right).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func nonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    private func text(_ status: HTTPResponse.Status, _ message: String) -> Response {
        answer(status, contentType: "text/plain; charset=utf-8", body: Data(message.utf8))
    }

    private func answer(_ status: HTTPResponse.Status, contentType: String, body: Data) -> Response {
        var fields = HTTPFields()
        fields[.contentType] = contentType
        fields[.cacheControl] = "no-store"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
