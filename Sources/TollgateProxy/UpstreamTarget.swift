/// Where a client's request target goes under the upstream's base path. Pure.
///
/// The client's path is joined under the base path, and then its dot segments are removed (RFC
/// 3986 §5.2.4), `%2E` counting as `.` as §6.2.2.2 says it must, so that `/../../admin` or
/// `/%2e%2e/admin` cannot climb out of `--upstream https://host/api/v1`. A target that would
/// still end outside the base path is refused, and so is one with an encoded or backslash
/// separator, or a dot segment behind a path parameter (`..;`), which upstreams resolve
/// differently.
enum UpstreamTarget {
    /// The upstream path and query for a client's request target, or nil when it leaves the base path.
    /// - Parameters:
    ///   - basePath: The upstream URL's path, such as `/api/v1` or empty.
    ///   - clientPath: The path the client asked for.
    ///   - query: The client's query, without `?`.
    /// - Returns: The path and query to send upstream.
    static func resolve(basePath: String, clientPath: String, query: String?) -> String? {
        // Separators an upstream may decode or honour after this check (`%2F`, `%5C`, `\`), and
        // a dot segment hidden behind a path parameter (`..;/`, which Tomcat and Spring resolve),
        // are refused outright rather than guessed at.
        let lowered = clientPath.lowercased()
        guard !lowered.contains("%2f"), !lowered.contains("%5c"), !lowered.contains("\\") else { return nil }
        for segment in clientPath.split(separator: "/") where segment.contains(";") {
            if dotSegment(segment.prefix { $0 != ";" }) > 0 { return nil }
        }
        let base = removingDotSegments(basePath.hasSuffix("/") ? String(basePath.dropLast()) : basePath)
        let joined = base + (clientPath.hasPrefix("/") ? clientPath : "/" + clientPath)
        let resolved = removingDotSegments(joined)
        guard base.isEmpty || base == "/" || resolved == base || resolved.hasPrefix(base + "/") else { return nil }
        var target = resolved.isEmpty ? "/" : resolved
        if let query, !query.isEmpty { target += "?" + query }
        return target
    }

    /// RFC 3986 §5.2.4's algorithm on `/`-separated segments: `.` goes, `..` takes the segment
    /// before it (never above the root), and a final `.` or `..` leaves a trailing slash.
    static func removingDotSegments(_ path: String) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(path.hasPrefix("/") ? 1 : 0)
        var output: [Substring] = []
        var endsInDirectory = false
        for segment in segments {
            switch dotSegment(segment) {
            case 1:
                endsInDirectory = true
            case 2:
                if !output.isEmpty { output.removeLast() }
                endsInDirectory = true
            default:
                output.append(segment)
                endsInDirectory = false
            }
        }
        var result = (path.hasPrefix("/") ? "/" : "") + output.joined(separator: "/")
        if endsInDirectory && !result.hasSuffix("/") { result += "/" }
        return result
    }

    /// 1 for `.`, 2 for `..` (in any mix of `.` and `%2E`), 0 otherwise.
    private static func dotSegment(_ segment: Substring) -> Int {
        var text = segment.lowercased()[...]
        var dots = 0
        while !text.isEmpty {
            if text.hasPrefix(".") {
                text = text.dropFirst()
            } else if text.hasPrefix("%2e") {
                text = text.dropFirst(3)
            } else {
                return 0
            }
            dots += 1
            if dots > 2 { return 0 }
        }
        return dots
    }
}
