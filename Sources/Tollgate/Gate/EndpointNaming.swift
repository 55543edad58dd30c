import HTTPTypes

/// Names a request's endpoint for the cost table, the circuit and the throttle.
///
/// The YouTube Data API v3 naming maps `GET /youtube/v3/videos` to `videos.list`,
/// `POST /youtube/v3/videos/rate` to `videos.rate`, `POST /upload/youtube/v3/videos` to
/// `videos.insert`; every other request is named `METHOD /path`.
///
/// Names are bounded: a naming made from templates (``init(templated:budget:)``, which description
/// files and the built-in namings use) gives at most ``EndpointNameBudget/valuesPerTemplate``
/// distinct names per template, and no name is longer than ``EndpointNameBudget/maximumNameBytes``.
public struct EndpointNaming: Sendable {
    /// A name, the template it was made from, and the name values past the budget fold into.
    public struct TemplatedName: Sendable, Hashable {
        /// The name for this request (`repos.issues.list`).
        public var name: String
        /// The template it came from (`repos.{collection}.list`); the name itself when it has no
        /// parameter, and then it is never folded.
        public var template: String
        /// What a value past the budget is named (`repos.other.list`).
        public var overflow: String

        /// Creates a templated name.
        /// - Parameters:
        ///   - name: The name.
        ///   - template: Its template; `name` when nil.
        ///   - overflow: The overflow name; `template` when nil.
        public init(_ name: String, template: String? = nil, overflow: String? = nil) {
            self.name = name
            self.template = template ?? name
            self.overflow = overflow ?? template ?? name
        }
    }

    private let name: @Sendable (HTTPRequest.Method, String) -> TemplatedName
    private let budget: EndpointNameBudget

    /// Creates a naming from a function of the method and the path (without the query). Each name
    /// it returns is its own template: it is cut to ``EndpointNameBudget/maximumNameBytes`` but never
    /// folded, so a function of your own should give a bounded set of names (or use
    /// ``init(templated:budget:)``).
    /// - Parameter name: Returns the endpoint name.
    public init(_ name: @escaping @Sendable (HTTPRequest.Method, String) -> String) {
        self.init(templated: { method, path in TemplatedName(name(method, path)) })
    }

    /// Creates a naming whose names come from templates, each bounded by `budget`.
    /// - Parameters:
    ///   - name: Returns the name, its template and its overflow name.
    ///   - budget: How many distinct names each template may give; 100 by default.
    public init(
        templated name: @escaping @Sendable (HTTPRequest.Method, String) -> TemplatedName,
        budget: EndpointNameBudget = EndpointNameBudget()
    ) {
        self.name = name
        self.budget = budget
    }

    /// The endpoint name of a request.
    ///
    /// The naming function sees the path without its query and without path parameters
    /// (`/v1/items;key=…` is named from `/v1/items`): both can carry secrets, and an endpoint name
    /// is written in plaintext to the ledger, the circuits, the throttle and the logs.
    /// - Parameter request: The request.
    /// - Returns: Its name, such as `videos.list` or `GET /api/activities`.
    public func endpoint(for request: HTTPRequest) -> String {
        let named = name(request.method, Self.pathWithoutParameters(request.path ?? "/"))
        return budget.admit(named.name, template: named.template, overflow: named.overflow)
    }

    /// A request target's path without its query, fragment and path parameters (`;name=value`
    /// after a segment).
    static func pathWithoutParameters(_ target: String) -> String {
        let path = target.utf8.prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        guard path.contains(UInt8(ascii: ";")) else { return String(Substring(path)) }
        var kept: [UInt8] = []
        kept.reserveCapacity(path.count)
        var inParameters = false
        for byte in path {
            if byte == UInt8(ascii: "/") { inParameters = false }
            if byte == UInt8(ascii: ";") { inParameters = true }
            if !inParameters { kept.append(byte) }
        }
        return String(decoding: kept, as: UTF8.self)
    }

    /// `METHOD /path`, for any API: at most 100 distinct paths per method, then `METHOD (other paths)`.
    public static let methodAndPath = EndpointNaming(templated: { method, path in
        byPath(method: method, path: path)
    })

    /// The YouTube Data API v3's method names, falling back to `METHOD /path`.
    public static let youTubeDataAPIv3 = EndpointNaming(templated: { method, path in
        youTubeMethodName(method: method, path: path).map {
            TemplatedName($0, template: "youtube \(method.rawValue)", overflow: "\(method.rawValue) (other YouTube methods)")
        } ?? byPath(method: method, path: path)
    })

    /// `METHOD /path`, templated by method: a fallback that names any path a client sends.
    /// - Parameters:
    ///   - method: The request's method.
    ///   - path: Its path.
    /// - Returns: The name, bounded per method.
    public static func byPath(method: HTTPRequest.Method, path: String) -> TemplatedName {
        TemplatedName("\(method.rawValue) \(path)", template: "\(method.rawValue) /{path}",
                      overflow: "\(method.rawValue) (other paths)")
    }

    private static func youTubeMethodName(method: HTTPRequest.Method, path: String) -> String? {
        let segments = path.split(separator: "/").map(String.init)
        let isUpload = segments.first == "upload"
        let rest = isUpload ? Array(segments.dropFirst()) : segments
        guard rest.count >= 3, rest[0] == "youtube", rest[1] == "v3" else { return nil }
        let resource = rest[2]
        if rest.count >= 4 {
            // Action paths: videos/rate, videos/getRating, thumbnails/set, captions/{id} (download).
            if resource == "captions" && method == .get { return "captions.download" }
            return "\(resource).\(rest[3])"
        }
        switch method {
        case .get, .head: return "\(resource).list"
        case .post: return "\(resource).insert"
        case .put: return "\(resource).update"
        case .delete: return "\(resource).delete"
        default: return nil
        }
    }
}
