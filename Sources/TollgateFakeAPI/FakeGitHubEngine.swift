import Foundation
import Synchronization

/// ``FakeGitHubAPI`` without networking: routes, per-resource rate-limit windows, entity tags and
/// the log of received requests, all behind one lock.
///
/// The rules, after GitHub's "Rate limits for the REST API" page:
/// - A resource's window starts at the first request counted against it, at that whole second,
///   and lasts the resource's ``FakeGitHubBehaviour/RateLimit/windowSeconds``; once the clock
///   reaches `X-RateLimit-Reset` the count starts again.
/// - Every routed request counts once against its resource, 404s against `core`, except a
///   `304 Not Modified` and `GET /rate_limit`, which count against nothing.
/// - The limit is checked before the validators: at zero remaining even a conditional request
///   gets the 403 (or the configured status) and counts against nothing.
final class FakeGitHubEngine: Sendable {
    /// The numbers of one resource at one moment, as the headers and `/rate_limit` show them.
    struct Numbers: Equatable {
        var limit: Int
        var used: Int
        var remaining: Int
        /// Epoch seconds.
        var reset: Int
    }

    /// One resource's window. `reset` is nil until the first counted request.
    private struct Window {
        var used = 0
        var reset: Date?
    }

    private struct State {
        var behaviour: FakeGitHubBehaviour
        var windows: [String: Window] = [:]
        var revisions: [String: Int] = [:]
        var received: [FakeGitHubReceivedRequest] = []
        /// The origin the JSON and `Link` name, as GitHub names `https://api.github.com`.
        var origin = "https://api.github.com"
    }

    /// What a request asks for.
    private enum Route {
        /// `GET /rate_limit`: counts against nothing.
        case rateLimit
        /// Anything else, counted against `resource`.
        case metered(resource: String, Target)

        /// The resource the request's headers describe: `core` for `/rate_limit`.
        var resource: String {
            switch self {
            case .rateLimit: FakeGitHubBehaviour.core
            case .metered(let resource, _): resource
            }
        }
    }

    /// What a metered request gets when the limit lets it through.
    private enum Target {
        /// A JSON resource; `body` makes it at a revision; `links` is its `Link` field, if any.
        case content(key: String, links: String? = nil, body: (Int) -> Any)
        /// A search without its `q` parameter: 422.
        case validationFailed(field: String)
        /// 404.
        case notFound
    }

    static let cacheControl = "private, max-age=60, s-maxage=60"
    static let vary = "Accept, Authorization, Cookie, X-GitHub-OTP"
    static let json = ("Content-Type", "application/json; charset=utf-8")
    static let mediaType = ("X-GitHub-Media-Type", "github.v3; format=json")
    static let exceededMessage = "API rate limit exceeded for 127.0.0.1. (But here's the good news: "
        + "Authenticated requests get a higher rate limit. Check out the documentation for more details.)"
    static let rateLimitDocumentation = "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"

    private let state: Mutex<State>
    /// Read inside the lock, so that requests are counted in the order of their times (the clock
    /// must not call back into the engine).
    private let now: @Sendable () -> Date

    init(behaviour: FakeGitHubBehaviour, now: @escaping @Sendable () -> Date) {
        state = Mutex(State(behaviour: behaviour))
        self.now = now
    }

    var behaviour: FakeGitHubBehaviour { state.withLock { $0.behaviour } }

    func updateBehaviour(_ change: (inout FakeGitHubBehaviour) -> Void) {
        state.withLock { change(&$0.behaviour) }
    }

    var received: [FakeGitHubReceivedRequest] { state.withLock { $0.received } }

    /// Names `origin` (`http://127.0.0.1:PORT`, no trailing `/`) in answers from now on.
    func setOrigin(_ origin: String) {
        state.withLock { $0.origin = origin.hasSuffix("/") ? String(origin.dropLast()) : origin }
    }

    func clearLog() { state.withLock { $0.received.removeAll() } }

    /// The numbers of `resource` now, or nil for a resource the fake does not meter.
    func numbers(of resource: String) -> Numbers? {
        state.withLock { state in
            let now = now()
            return state.behaviour.rateLimit(of: resource).map { Self.numbers(state.windows[resource], $0, now) }
        }
    }

    /// Counts `requests` against `resource` as another client on the same token would, without
    /// going past the limit. A resource the fake does not meter changes nothing.
    func consume(resource: String, requests: Int) {
        state.withLock { state in
            let now = now()
            guard let rateLimit = state.behaviour.rateLimit(of: resource) else { return }
            for _ in 0..<max(0, requests) {
                guard Self.numbers(state.windows[resource], rateLimit, now).remaining > 0 else { return }
                Self.count(resource, rateLimit, now, &state)
            }
        }
    }

    /// Changes the resource at `target` (a path, with its query for searches) so that its body and
    /// entity tag change.
    func modify(target: String) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let key = Self.resourceKey(path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : "")
        state.withLock { $0.revisions[key, default: 1] += 1 }
    }

    func answer(_ request: FakeHTTPRequest) -> FakeHTTPAnswer {
        state.withLock { state in
            let now = now()
            let route = Self.route(method: request.method, path: request.path, query: request.query, origin: state.origin)
            var (answer, counted) = Self.answer(request, route: route, now: now, state: &state)
            if state.behaviour.gzipsWhenAsked, !answer.body.isEmpty, GzipEncoding.accepts(request.headers["accept-encoding"]) {
                answer.body = GzipEncoding.gzipped(answer.body)
                answer.headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
            }
            state.received.append(FakeGitHubReceivedRequest(
                method: request.method, path: request.path, query: request.query, headers: request.headers,
                status: answer.status, resource: route.resource, counted: counted
            ))
            return answer
        }
    }

    private static func answer(
        _ request: FakeHTTPRequest, route: Route, now: Date, state: inout State
    ) -> (FakeHTTPAnswer, counted: Bool) {
        let isHead = request.method == "HEAD"
        guard case .metered(let resource, let target) = route else {
            var resources: [String: Any] = [:]
            for name in FakeGitHubBehaviour.resources {
                guard let rateLimit = state.behaviour.rateLimit(of: name) else { continue }
                let numbers = numbers(state.windows[name], rateLimit, now)
                resources[name] = ["limit": numbers.limit, "used": numbers.used, "remaining": numbers.remaining,
                                   "reset": numbers.reset]
            }
            let body = encode(["resources": resources, "rate": resources[FakeGitHubBehaviour.core] ?? [:]])
            let core = numbers(state.windows[FakeGitHubBehaviour.core], state.behaviour.core, now)
            let headers = [json, ("Cache-Control", "no-cache"), mediaType]
                + rateLimitHeaders(core, resource: FakeGitHubBehaviour.core)
            return (FakeHTTPAnswer(status: 200, headers: headers, body: isHead ? Data() : body), false)
        }
        let rateLimit = state.behaviour.rateLimit(of: resource) ?? state.behaviour.core
        let before = numbers(state.windows[resource], rateLimit, now)
        guard before.remaining > 0 else {
            let body = encode(["message": exceededMessage, "documentation_url": rateLimitDocumentation])
            let headers = [json, mediaType] + rateLimitHeaders(before, resource: resource)
            return (FakeHTTPAnswer(status: state.behaviour.exceededStatus, headers: headers, body: body), false)
        }
        switch target {
        case .notFound:
            let after = count(resource, rateLimit, now, &state)
            let body = encode(["message": "Not Found", "documentation_url": "https://docs.github.com/rest"])
            return (FakeHTTPAnswer(status: 404, headers: [json, mediaType] + rateLimitHeaders(after, resource: resource),
                                   body: isHead ? Data() : body), true)
        case .validationFailed(let field):
            let after = count(resource, rateLimit, now, &state)
            let body = encode([
                "message": "Validation Failed",
                "errors": [["resource": "Search", "field": field, "code": "missing"]],
                "documentation_url": "https://docs.github.com/rest/search/search",
            ])
            return (FakeHTTPAnswer(status: 422, headers: [json, mediaType] + rateLimitHeaders(after, resource: resource),
                                   body: isHead ? Data() : body), true)
        case .content(let key, let links, let makeBody):
            let body = encode(makeBody(state.revisions[key, default: 1]))
            let etag = entityTag(body)
            let validators = [("Cache-Control", cacheControl), ("Vary", vary), ("ETag", etag)]
            if FakeAPIEngine.matches(ifNoneMatch: request.headers["if-none-match"], etag: etag) {
                return (FakeHTTPAnswer(status: 304, headers: validators + rateLimitHeaders(before, resource: resource),
                                       body: Data()), false)
            }
            let after = count(resource, rateLimit, now, &state)
            let headers = [json] + validators + [mediaType] + (links.map { [("Link", $0)] } ?? [])
                + rateLimitHeaders(after, resource: resource)
            return (FakeHTTPAnswer(status: 200, headers: headers, body: isHead ? Data() : body), true)
        }
    }

    /// The numbers a window shows at `now`: a window whose reset has come is a fresh one, and a
    /// fresh one would reset a whole window from this second.
    private static func numbers(_ window: Window?, _ rateLimit: FakeGitHubBehaviour.RateLimit, _ now: Date) -> Numbers {
        let live = window.flatMap { window in window.reset.map { $0 > now } ?? false ? window : nil }
        let used = live?.used ?? 0
        let reset = live?.reset ?? windowEnd(startingAt: now, rateLimit)
        return Numbers(limit: rateLimit.limit, used: used, remaining: max(0, rateLimit.limit - used),
                       reset: Int(reset.timeIntervalSince1970))
    }

    /// Counts one request against `resource`, starting its window if none is running.
    @discardableResult
    private static func count(
        _ resource: String, _ rateLimit: FakeGitHubBehaviour.RateLimit, _ now: Date, _ state: inout State
    ) -> Numbers {
        var window = state.windows[resource] ?? Window()
        if let reset = window.reset, reset <= now {
            window = Window()
        }
        if window.reset == nil {
            window.reset = windowEnd(startingAt: now, rateLimit)
        }
        window.used += 1
        state.windows[resource] = window
        return numbers(window, rateLimit, now)
    }

    private static func windowEnd(startingAt now: Date, _ rateLimit: FakeGitHubBehaviour.RateLimit) -> Date {
        Date(timeIntervalSince1970: (now.timeIntervalSince1970.rounded(.down) + Double(rateLimit.windowSeconds)))
    }

    private static func rateLimitHeaders(_ numbers: Numbers, resource: String) -> [(String, String)] {
        [
            ("X-RateLimit-Limit", String(numbers.limit)),
            ("X-RateLimit-Remaining", String(numbers.remaining)),
            ("X-RateLimit-Reset", String(numbers.reset)),
            ("X-RateLimit-Used", String(numbers.used)),
            ("X-RateLimit-Resource", resource),
        ]
    }

    /// A strong entity tag from the body's bytes.
    static func entityTag(_ body: Data) -> String {
        "\"" + String(FNV1a.hash(body), radix: 16) + "\""
    }

    /// The resource a request names: its path and its query parameters sorted.
    static func resourceKey(path: String, query: String) -> String {
        path + "?" + query.split(separator: "&").sorted().joined(separator: "&")
    }

    private static func route(method: String, path: String, query: String, origin: String) -> Route {
        let core = FakeGitHubBehaviour.core
        let search = FakeGitHubBehaviour.search
        guard method == "GET" || method == "HEAD" else { return .metered(resource: core, .notFound) }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        let key = resourceKey(path: path, query: query)
        switch segments.count {
        case 1 where segments[0] == "rate_limit":
            return .rateLimit
        case 2 where segments[0] == "users" && !segments[1].isEmpty:
            return .metered(resource: core, .content(key: key) { revision in
                user(segments[1], revision: revision, origin: origin)
            })
        case 2 where segments[0] == "search" && ["repositories", "issues"].contains(segments[1]):
            guard let q = queryValue("q", in: query), !q.isEmpty else {
                return .metered(resource: search, .validationFailed(field: "q"))
            }
            return .metered(resource: search, .content(key: key) { revision in
                searchResult(kind: segments[1], q: q, revision: revision, origin: origin)
            })
        case 3 where segments[0] == "repos" && !segments[1].isEmpty && !segments[2].isEmpty:
            return .metered(resource: core, .content(key: key) { revision in
                repository(owner: segments[1], name: segments[2], revision: revision, origin: origin)
            })
        case 4 where segments[0] == "repos" && !segments[1].isEmpty && !segments[2].isEmpty && segments[3] == "issues":
            let page = max(1, queryValue("page", in: query).flatMap { Int($0) } ?? 1)
            let collection = "\(origin)/repos/\(segments[1])/\(segments[2])/issues"
            let links = page == 1
                ? "<\(pageURL(collection, query: query, page: 2))>; rel=\"next\", <\(pageURL(collection, query: query, page: 2))>; rel=\"last\""
                : "<\(pageURL(collection, query: query, page: 1))>; rel=\"prev\", <\(pageURL(collection, query: query, page: 1))>; rel=\"first\""
            return .metered(resource: core, .content(key: key, links: links) { revision in
                issues(owner: segments[1], name: segments[2], page: page, revision: revision, origin: origin)
            })
        default:
            return .metered(resource: core, .notFound)
        }
    }

    private static func queryValue(_ name: String, in query: String) -> String? {
        for item in query.split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0] == name else { continue }
            let value = parts.count > 1 ? String(parts[1]) : ""
            return value.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? value
        }
        return nil
    }

    private static func identifier(_ text: String) -> Int {
        Int(FNV1a.hash(text.utf8) % 1_000_000_000)
    }

    /// `collection` with the request's query, `page` set to `page`, as GitHub writes its `Link`s.
    private static func pageURL(_ collection: String, query: String, page: Int) -> String {
        let kept = query.split(separator: "&").filter { !$0.hasPrefix("page=") && $0 != "page" }
        return collection + "?" + (kept + ["page=\(page)"]).joined(separator: "&")
    }

    private static func owner(_ login: String, origin: String) -> [String: Any] {
        ["login": login, "id": identifier("user:" + login), "type": "User",
         "url": "\(origin)/users/\(login)",
         "html_url": "https://github.com/\(login)",
         "repos_url": "\(origin)/users/\(login)/repos",
         "avatar_url": "https://avatars.githubusercontent.com/u/\(identifier("user:" + login))?v=4"]
    }

    private static func user(_ login: String, revision: Int, origin: String) -> Any {
        owner(login, origin: origin).merging(["name": "\(login) (revision \(revision))", "public_repos": 1]) { $1 }
    }

    private static func repository(owner login: String, name: String, revision: Int, origin: String) -> [String: Any] {
        let url = "\(origin)/repos/\(login)/\(name)"
        return [
            "id": identifier("repo:\(login)/\(name)"),
            "name": name,
            "full_name": "\(login)/\(name)",
            "owner": owner(login, origin: origin),
            "private": false,
            "description": "\(login)/\(name) (revision \(revision))",
            "url": url,
            "html_url": "https://github.com/\(login)/\(name)",
            "issues_url": "\(url)/issues{/number}",
            "pulls_url": "\(url)/pulls{/number}",
            "labels_url": "\(url)/labels{/name}",
        ]
    }

    private static func issue(owner login: String, name: String, number: Int, revision: Int, origin: String) -> [String: Any] {
        let repository = "\(origin)/repos/\(login)/\(name)"
        return [
            "id": identifier("issue:\(login)/\(name)#\(number)"),
            "number": number,
            "title": "Issue \(number) of \(login)/\(name) (revision \(revision))",
            "state": "open",
            "user": owner(login, origin: origin),
            "url": "\(repository)/issues/\(number)",
            "repository_url": repository,
            "comments_url": "\(repository)/issues/\(number)/comments",
            "labels_url": "\(repository)/issues/\(number)/labels{/name}",
            "html_url": "https://github.com/\(login)/\(name)/issues/\(number)",
        ]
    }

    /// Two issues a page, on two pages; pages past them are empty.
    private static func issues(owner login: String, name: String, page: Int, revision: Int, origin: String) -> Any {
        guard page <= 2 else { return [Any]() }
        return [page * 2 - 1, page * 2].map { issue(owner: login, name: name, number: $0, revision: revision, origin: origin) }
    }

    private static func searchResult(kind: String, q: String, revision: Int, origin: String) -> Any {
        let item: [String: Any] = kind == "issues"
            ? issue(owner: "octocat", name: "hello-world", number: 1, revision: revision, origin: origin)
                .merging(["title": "\(q) (revision \(revision))"]) { $1 }
            : repository(owner: "octocat", name: "hello-world", revision: revision, origin: origin)
                .merging(["description": "\(q) (revision \(revision))"]) { $1 }
        return ["total_count": 1, "incomplete_results": false, "items": [item]] as [String: Any]
    }

    private static func encode(_ object: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    }
}
