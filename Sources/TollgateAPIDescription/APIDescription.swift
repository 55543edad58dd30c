import Foundation
import Tollgate

/// A quota-limited API described in a file: which requests are which endpoints, what each costs
/// in which bucket, and the throttle, circuit, retry and secret rules that apply — so that
/// `tollgate proxy --api FILE` and `tollgate get --api FILE` put an API other than YouTube behind
/// the gate without a line of Swift.
///
/// ```yaml
/// api: Tiered app backend
/// upstream: https://api.example.com
/// buckets:
///   server: {limit: 10000, window: day}
/// defaults: {bucket: server, cost: 1, throttle: {requests: 30, per: 60s}}
/// routes:
///   - {method: GET, path: /api/activities, endpoint: activities}
/// endpoints:
///   activities: {throttle: {requests: 10, per: 60s}}
/// ```
///
/// Read one with ``init(yaml:file:)`` or ``load(from:)``; ``gateConfiguration()`` and ``naming``
/// give the gate what it follows. The format is YAML (read with Yams): operators write it by hand,
/// with comments, as they write OpenAPI and Kubernetes files.
public struct APIDescription: Sendable, Hashable {
    /// The API's name, shown by `tollgate api show`.
    public var name: String
    /// Where requests go when the command line names no upstream.
    public var upstream: URL?
    /// The buckets units are charged in, by name.
    public var buckets: [String: Bucket]
    /// What applies to an endpoint that sets nothing of its own.
    public var defaults: Defaults
    /// How requests are named, first match wins; a request that matches none is `METHOD /path`.
    public var routes: [Route]
    /// The endpoints that differ from the defaults, by name.
    public var endpoints: [String: Endpoint]
    /// Parameter and header names whose values are secrets, added to the built-in lists.
    public var secrets: Secrets
    /// Answers that mean "the quota is spent", beyond YouTube's `quotaExceeded`.
    public var quotaExhausted: [ExhaustionRule]
    /// What `tollgate proxy` points at itself besides `Link`, `Location` and `Content-Location`.
    public var rewriteURLs = URLRewriting()
    /// What the file says in a way that still works but is on its way out (a deprecated key), one
    /// line each, with the line it is on: `tollgate api check` prints them.
    public var deprecations: [String] = []

    /// The time zone of YouTube's quota day, the default window's.
    public static let pacificTimeZone = PacificDay.timeZoneIdentifier

    /// A budget of units over a window.
    public struct Bucket: Sendable, Hashable {
        /// Units per window.
        public var limit: Int
        /// The window the limit applies to.
        public var window: Window
        /// Which limit the server announces in its answers' fields the bucket follows, if any.
        public var announced: QuotaConfiguration.AnnouncedLimitSelector?
        /// How the bucket spends its last units, if it paces them.
        public var pacing: QuotaPacing?

        /// Creates a bucket.
        /// - Parameters:
        ///   - limit: Units per window.
        ///   - window: The window.
        ///   - announced: The announced limit it follows.
        ///   - pacing: How it paces its last units.
        public init(
            limit: Int, window: Window, announced: QuotaConfiguration.AnnouncedLimitSelector? = nil,
            pacing: QuotaPacing? = nil
        ) {
            self.limit = limit
            self.window = window
            self.announced = announced
            self.pacing = pacing
        }
    }

    /// When a bucket's units come back: the ledger's own windows, read from the file as they are
    /// stored (`day`, `{day: Asia/Tokyo}`, `hour`, `minute`, `month`, `{rolling: 90s}`).
    public typealias Window = QuotaWindow

    /// The rules of endpoints that set none of their own.
    public struct Defaults: Sendable, Hashable {
        /// The bucket an endpoint is charged in.
        public var bucket: String
        /// What one call costs.
        public var cost: Int
        /// What a `304 Not Modified` costs (`not_modified_cost`): the full price unless the file
        /// says otherwise, so the ledger never undercounts an API it knows nothing about.
        public var notModifiedCost: NotModifiedCost
        /// Requests per window, per endpoint.
        public var throttle: ThrottleLimit
        /// When an endpoint's circuit opens and for how long.
        public var circuit: CircuitPolicy
        /// Backoff and retries.
        public var retry: RetryPolicy
        /// How long stored answers are served without asking (`fresh_for`); nil follows RFC 9111 alone.
        public var freshFor: ChosenFreshness? = nil
    }

    /// One endpoint's rules; nil fields follow ``Defaults``.
    public struct Endpoint: Sendable, Hashable {
        /// The units one call costs.
        public var cost: Int?
        /// The bucket they are charged in.
        public var bucket: String?
        /// Every bucket a call is charged in, with its units, for a call metered in several: the
        /// first is its main bucket. Given instead of ``cost`` and ``bucket``.
        public var charges: [QuotaConfiguration.BucketCharge]?
        /// What a `304` costs.
        public var notModifiedCost: NotModifiedCost?
        /// Its own throttle window.
        public var throttle: ThrottleLimit?
        /// Its own circuit policy.
        public var circuit: CircuitPolicy?
        /// Where its actual cost is read from the answer, when its cost is an estimate.
        public var actualCost: QuotaConfiguration.ActualCost?
        /// Its own retry policy.
        public var retry: RetryPolicy?
        /// How its single-ID requests are batched, when it takes several IDs in one parameter.
        public var batch: BatchPolicy?
        /// How long its stored answers are served without asking (`fresh_for`).
        public var freshFor: ChosenFreshness?
    }

    /// `METHOD /path/{param}` → an endpoint name, which may use the path's parameters
    /// (`{resource}.list`).
    public struct Route: Sendable, Hashable {
        /// The methods it matches; empty for any.
        public var methods: Set<String>
        /// The path's segments: literal text, or a `{name}` that matches any one segment.
        public var segments: [Segment]
        /// The endpoint name, with `{name}` replaced by the segment it matched.
        public var endpoint: String

        /// One segment of a route's path.
        public enum Segment: Sendable, Hashable {
            /// Matches this text exactly.
            case literal(String)
            /// Matches any one segment, and names it.
            case parameter(String)
        }
    }

    /// Names whose values are secrets: never stored, hashed into the cache's credential partition.
    public struct Secrets: Sendable, Hashable {
        /// Query and path parameter names.
        public var parameters: [String]
        /// Request header names.
        public var headers: [String]
    }

    /// Links in answers that the proxy points back at itself, so that a client following them stays
    /// behind the gate (`rewrite_urls: {bodies: [application/json]}`). The proxy always rewrites the
    /// upstream's URLs in `Link`, `Location` and `Content-Location`; bodies only when listed here. A
    /// Swift app behind the URLSession drop-in needs none of this: it talks to the real host.
    public struct URLRewriting: Sendable, Hashable {
        /// Media types (`application/json`, lowercased, without parameters) whose JSON string values
        /// that are URLs to the upstream are rewritten on the way out to the client.
        public var bodies: [String]

        /// Rewrites the bodies of `bodies`.
        /// - Parameter bodies: Media types such as `application/json`.
        public init(bodies: [String] = []) {
            self.bodies = bodies
        }
    }

    /// An answer that says the quota is spent.
    public struct ExhaustionRule: Sendable, Hashable {
        /// The status it has.
        public var status: Int
        /// A header it has, with this value (`X-RateLimit-Remaining: 0`); nil for any.
        public var header: (name: String, value: String)?
        /// An error reason in its body (Google's `quotaExceeded`); nil for any.
        public var reason: String?

        public static func == (first: ExhaustionRule, second: ExhaustionRule) -> Bool {
            first.status == second.status && first.header?.name == second.header?.name
                && first.header?.value == second.header?.value && first.reason == second.reason
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(status)
            hasher.combine(header?.name)
            hasher.combine(header?.value)
            hasher.combine(reason)
        }
    }
}
