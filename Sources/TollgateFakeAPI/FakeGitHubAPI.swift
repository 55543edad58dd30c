import Foundation
import Logging

/// A real HTTP server on loopback that rate-limits like GitHub's REST API: resources with limits of
/// their own, announced in `X-RateLimit-*` headers on every answer.
///
/// Routes, after GitHub's "Rate limits for the REST API" page:
/// - `GET /repos/{owner}/{repo}`, `GET /users/{user}` and `GET /repos/{owner}/{repo}/issues`
///   count against `core`; `GET /search/repositories?q=…` and `GET /search/issues?q=…` against
///   `search` (a search without `q` is a `422` and still counts).
/// - Issues come in two pages of two, as GitHub paginates: page 1 (no `page`, or `page=1`) says
///   `Link: <…/issues?page=2>; rel="next", <…/issues?page=2>; rel="last"`, page 2 links back with
///   `prev` and `first`; the other query parameters are kept in the links, and pages past 2 are empty.
/// - Like GitHub's, the JSON names resources by absolute URLs on the API's own origin — this
///   server's ``baseURL`` (`url`, `issues_url`, `repository_url`, URI templates such as
///   `{/number}`) — and web pages on `https://github.com` (`html_url`).
/// - `GET /rate_limit` answers every resource's numbers as JSON and counts against nothing.
/// - Anything else, any other method included, is a `404` `{"message":"Not Found",…}` counted
///   against `core`, as on GitHub.
///
/// Every answer carries `X-RateLimit-Limit`, `-Remaining`, `-Used`, `-Reset` (epoch seconds) and
/// `-Resource`. A resource's window starts at the first request counted against it, at that whole
/// second, and lasts ``FakeGitHubBehaviour/RateLimit/windowSeconds`` (an hour for `core`, a minute
/// for `search`); when the injected clock reaches the reset time the count starts again.
///
/// Resources are JSON with a strong `ETag` computed from the body's bytes,
/// `Cache-Control: private, max-age=60, s-maxage=60` and GitHub's `Vary`. A matching
/// `If-None-Match` gets `304 Not Modified`, which counts against nothing (its headers show the
/// current numbers). With nothing remaining, a request gets
/// ``FakeGitHubBehaviour/exceededStatus`` (403 by default) with GitHub's
/// `API rate limit exceeded for 127.0.0.1. …` body and counts against nothing; the limit is checked
/// before the validators, so a conditional request gets it too.
///
/// ```swift
/// let clock = ManualClock()
/// let api = try await FakeGitHubAPI.start(behaviour: FakeGitHubBehaviour(coreLimit: 10), now: { clock.now() })
/// let url = api.url("/repos/octocat/hello-world")
/// ```
public final class FakeGitHubAPI: Sendable {
    private let server: LoopbackFakeServer
    private let engine: FakeGitHubEngine

    /// The port the operating system picked on 127.0.0.1.
    public var port: Int { server.port }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    private init(server: LoopbackFakeServer, engine: FakeGitHubEngine) {
        self.server = server
        self.engine = engine
    }

    /// Starts a server on 127.0.0.1, on a port the operating system picks.
    /// - Parameters:
    ///   - behaviour: The limits and settings to start with.
    ///   - now: The clock that windows and reset times are computed from; a test moves it to pass a
    ///     reset without sleeping.
    ///   - logger: Where the server logs; the task's current logger by default.
    /// - Returns: The running server.
    /// - Throws: ``FakeAPIError/couldNotStart`` when the server cannot bind.
    public static func start(
        behaviour: FakeGitHubBehaviour = FakeGitHubBehaviour(),
        now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger.current
    ) async throws -> FakeGitHubAPI {
        let engine = FakeGitHubEngine(behaviour: behaviour, now: now)
        let server = try await LoopbackFakeServer.start(serverName: "FakeGitHubAPI", logger: logger) { request in
            engine.answer(request)
        }
        let api = FakeGitHubAPI(server: server, engine: engine)
        // As GitHub names https://api.github.com in its answers, the fake names its own origin.
        engine.setOrigin(api.baseURL.absoluteString)
        return api
    }

    /// Stops the server and waits until it has closed its socket.
    public func stop() async {
        await server.stop()
    }

    /// The URL of a path on this server, such as `url("/search/issues", ["q": "is:open"])`.
    /// - Parameters:
    ///   - path: The path, starting with `/`.
    ///   - query: Query parameters.
    /// - Returns: The absolute URL.
    public func url(_ path: String, _ query: KeyValuePairs<String, String> = [:]) -> URL {
        var components = URLComponents(url: baseURL.appending(path: path), resolvingAgainstBaseURL: false)!
        if query.count > 0 {
            components.queryItems = query.map { URLQueryItem(name: $0.key, value: $0.value) }
        }
        return components.url!
    }

    /// The limits and settings in force.
    public var behaviour: FakeGitHubBehaviour { engine.behaviour }

    /// Changes limits or settings while the server runs. Counts already made stay.
    /// - Parameter change: Edits the behaviour in place.
    public func updateBehaviour(_ change: (inout FakeGitHubBehaviour) -> Void) {
        engine.updateBehaviour(change)
    }

    /// Every request received so far, oldest first.
    public var receivedRequests: [FakeGitHubReceivedRequest] { engine.received }

    /// Forgets the received requests.
    public func clearReceivedRequests() { engine.clearLog() }

    /// Requests left in a resource's window at the injected clock's now, as the next answer's
    /// `X-RateLimit-Remaining` would say before counting.
    /// - Parameter resource: `core` or `search`.
    /// - Returns: The requests left, or nil for a resource the fake does not meter.
    public func remaining(of resource: String) -> Int? {
        engine.numbers(of: resource)?.remaining
    }

    /// Requests counted in a resource's current window, as `X-RateLimit-Used` would say.
    /// - Parameter resource: `core` or `search`.
    /// - Returns: The requests counted, or nil for a resource the fake does not meter.
    public func used(of resource: String) -> Int? {
        engine.numbers(of: resource)?.used
    }

    /// When a resource's window resets, as `X-RateLimit-Reset` would say: the running window's
    /// end, or a whole window from now when none is running.
    /// - Parameter resource: `core` or `search`.
    /// - Returns: The reset time in whole epoch seconds, or nil for a resource the fake does not meter.
    public func reset(of resource: String) -> Date? {
        engine.numbers(of: resource).map { Date(timeIntervalSince1970: TimeInterval($0.reset)) }
    }

    /// Spends requests of a resource as another client using the same token would: the window
    /// starts if none is running, and the count stops at the limit. A resource the fake does not
    /// meter changes nothing.
    /// - Parameters:
    ///   - resource: `core` or `search`.
    ///   - requests: How many requests the other client made.
    public func consume(resource: String, requests: Int) {
        engine.consume(resource: resource, requests: requests)
    }

    /// Changes a resource so that its body and ETag change.
    /// - Parameter path: The path, such as `/repos/octocat/hello-world`, with its query for a search
    ///   (`/search/issues?q=bug`, as sent on the wire; parameter order does not matter).
    public func modify(path: String) {
        engine.modify(target: path)
    }
}

/// The limits and settings of ``FakeGitHubAPI``.
public struct FakeGitHubBehaviour: Sendable, Hashable {
    /// The name of the resource most routes count against.
    public static let core = "core"
    /// The name of the search resource.
    public static let search = "search"
    /// Every resource the fake meters, in the order `/rate_limit` lists them.
    public static let resources = [core, search]

    /// One resource's limit and window.
    public struct RateLimit: Sendable, Hashable {
        /// Requests allowed in one window.
        public var limit: Int
        /// The window's length in seconds, from the first request counted in it.
        public var windowSeconds: Int

        /// Creates a limit.
        /// - Parameters:
        ///   - limit: Requests allowed in one window.
        ///   - windowSeconds: The window's length in seconds.
        public init(limit: Int, windowSeconds: Int) {
            self.limit = limit
            self.windowSeconds = windowSeconds
        }
    }

    /// The `core` limit: 5,000 requests an hour by default, as for a personal access token.
    public var core: RateLimit
    /// The `search` limit: 30 requests a minute by default.
    public var search: RateLimit
    /// The status sent when a resource has nothing left: 403 as GitHub does by default, or 429.
    public var exceededStatus: Int
    /// Answer with `Content-Encoding: gzip` (and `Vary: Accept-Encoding`) when the request's
    /// `Accept-Encoding` lists gzip, as api.github.com does; off by default.
    public var gzipsWhenAsked = false

    /// Creates settings.
    /// - Parameters:
    ///   - coreLimit: `core` requests an hour.
    ///   - searchLimit: `search` requests a minute.
    ///   - exceededStatus: The status sent when a resource has nothing left (403 or 429).
    public init(coreLimit: Int = 5_000, searchLimit: Int = 30, exceededStatus: Int = 403) {
        core = RateLimit(limit: coreLimit, windowSeconds: 3_600)
        search = RateLimit(limit: searchLimit, windowSeconds: 60)
        self.exceededStatus = exceededStatus
    }

    /// The limit of a resource by name, or nil for one the fake does not meter.
    /// - Parameter resource: `core` or `search`.
    /// - Returns: Its limit and window.
    public func rateLimit(of resource: String) -> RateLimit? {
        switch resource {
        case Self.core: core
        case Self.search: search
        default: nil
        }
    }
}

/// One request ``FakeGitHubAPI`` received, as it arrived on the wire.
public struct FakeGitHubReceivedRequest: Sendable, Hashable {
    /// The method, such as `GET`.
    public let method: String
    /// The path without the query, such as `/repos/octocat/hello-world`.
    public let path: String
    /// The query string, without `?`; empty when there was none.
    public let query: String
    /// Every header field as received, lowercased names.
    public let headers: [String: String]
    /// The status the fake answered with.
    public let status: Int
    /// The resource whose numbers the answer's headers carry: `core` or `search`.
    public let resource: String
    /// Whether the request counted against ``resource``: false for a 304, for `/rate_limit` and
    /// for an answer refused because nothing was left.
    public let counted: Bool

    /// The path with its query, such as `/search/issues?q=bug`.
    public var target: String { query.isEmpty ? path : path + "?" + query }
    /// The `If-None-Match` header, if the client sent one.
    public var ifNoneMatch: String? { headers["if-none-match"] }
    /// The `Authorization` header, if the client sent one.
    public var authorization: String? { headers["authorization"] }
}
