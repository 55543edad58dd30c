import HTTPTypes

/// Names a request's endpoint for the cost table, the circuit and the throttle.
///
/// The YouTube Data API v3 naming maps `GET /youtube/v3/videos` to `videos.list`,
/// `POST /youtube/v3/videos/rate` to `videos.rate`, `POST /upload/youtube/v3/videos` to
/// `videos.insert`; every other request is named `METHOD /path`.
public struct EndpointNaming: Sendable {
    private let name: @Sendable (HTTPRequest.Method, String) -> String

    /// Creates a naming from a function of the method and the path (without the query).
    /// - Parameter name: Returns the endpoint name.
    public init(_ name: @escaping @Sendable (HTTPRequest.Method, String) -> String) {
        self.name = name
    }

    /// The endpoint name of a request.
    ///
    /// The naming function sees the path without its query and without path parameters
    /// (`/v1/items;key=…` is named from `/v1/items`): both can carry secrets, and an endpoint name
    /// is written in plaintext to the ledger, the circuits, the throttle and the logs.
    /// - Parameter request: The request.
    /// - Returns: Its name, such as `videos.list` or `GET /api/activities`.
    public func endpoint(for request: HTTPRequest) -> String {
        name(request.method, Self.pathWithoutParameters(request.path ?? "/"))
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

    /// `METHOD /path`, for any API.
    public static let methodAndPath = EndpointNaming { method, path in "\(method.rawValue) \(path)" }

    /// The YouTube Data API v3's method names, falling back to `METHOD /path`.
    public static let youTubeDataAPIv3 = EndpointNaming { method, path in
        youTubeMethodName(method: method, path: path) ?? "\(method.rawValue) \(path)"
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
