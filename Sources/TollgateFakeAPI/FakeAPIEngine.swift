import Foundation
import Synchronization

/// The fake API's behaviour without any networking: resources, versions, quota, faults and the log
/// of received requests. ``FakeYouTubeAPI`` serves it over HTTP.
final class FakeAPIEngine: Sendable {
    struct Answer: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: Data
    }

    private struct State {
        var behaviour = FakeAPIBehaviour()
        var versions: [String: Int] = [:]
        /// Units spent today, per bucket: `youtube`, `youtube.search`, `youtube.videos.insert`.
        var used: [String: Int] = [:]
        var received: [FakeAPIReceivedRequest] = []
    }

    private let state = Mutex(State())

    var behaviour: FakeAPIBehaviour {
        get { state.withLock { $0.behaviour } }
        set { state.withLock { $0.behaviour = newValue } }
    }

    func updateBehaviour(_ change: (inout FakeAPIBehaviour) -> Void) {
        state.withLock { change(&$0.behaviour) }
    }

    var received: [FakeAPIReceivedRequest] { state.withLock { $0.received } }
    var unitsUsed: Int { state.withLock { $0.used["youtube", default: 0] } }

    func unitsUsed(bucket: String) -> Int { state.withLock { $0.used[bucket, default: 0] } }

    func clearLog() { state.withLock { $0.received.removeAll() } }
    func resetQuota() { state.withLock { $0.used.removeAll() } }

    /// Changes the resource at `path` and `query`, so its ETag changes.
    func modify(path: String, query: String) {
        let key = Self.resourceKey(path: path, query: query)
        state.withLock { $0.versions[key, default: 1] += 1 }
    }

    func answer(method: String, path: String, query: String, headers: [String: String]) -> Answer {
        state.withLock { state in
            let (answer, units) = Self.answer(method: method, path: path, query: query, headers: headers, state: &state)
            state.received.append(FakeAPIReceivedRequest(
                method: method, path: path, query: query, headers: headers, status: answer.status, unitsCharged: units
            ))
            return answer
        }
    }

    private static func answer(
        method: String, path: String, query: String, headers: [String: String], state: inout State
    ) -> (Answer, Int) {
        let json = [("Content-Type", "application/json; charset=UTF-8")]
        if var outage = state.behaviour.outage {
            outage.remaining = outage.remaining.map { $0 - 1 }
            state.behaviour.outage = outage.remaining.map { $0 > 0 } ?? true ? outage : nil
            return (Answer(status: outage.status, headers: json, body: GoogleErrorBody.backendError(status: outage.status)), 0)
        }
        if var storm = state.behaviour.rateLimitStorm {
            storm.remaining = storm.remaining.map { $0 - 1 }
            state.behaviour.rateLimitStorm = storm.remaining.map { $0 > 0 } ?? true ? storm : nil
            var headers = json
            if let retryAfter = storm.retryAfter { headers.append(("Retry-After", retryAfter)) }
            return storm.asGoogle403
                ? (Answer(status: 403, headers: headers, body: GoogleErrorBody.rateLimitExceeded()), 0)
                : (Answer(status: 429, headers: headers, body: GoogleErrorBody.tooManyRequests()), 0)
        }
        guard path.hasPrefix("/youtube/v3/"), path.count > "/youtube/v3/".count else {
            return (Answer(status: 404, headers: json, body: GoogleErrorBody.notFound(path: path)), 0)
        }
        let key = resourceKey(path: path, query: query)
        let isRead = method == "GET" || method == "HEAD"
        if !isRead {
            state.versions[key, default: 1] += 1
        }
        let version = state.versions[key, default: 1]
        let etag = entityTag(key: key, version: version, weak: state.behaviour.weakETags)
        let notModified = isRead && matches(ifNoneMatch: headers["if-none-match"], etag: etag)
        let price = price(method: method, path: path, model: state.behaviour.quotaModel)
        let cost = notModified ? min(state.behaviour.notModifiedUnits ?? price.units, price.units) : price.units
        let limit = switch price.bucket {
        case "youtube.search": state.behaviour.searchCallsPerDay
        case "youtube.videos.insert": state.behaviour.uploadCallsPerDay
        default: state.behaviour.dailyQuota
        }
        if cost > 0 && state.used[price.bucket, default: 0] + cost > limit {
            return (Answer(status: 403, headers: json, body: GoogleErrorBody.quotaExceeded(bucket: price.bucket)), 0)
        }
        state.used[price.bucket, default: 0] += cost
        let cacheControl = state.behaviour.maxAge.map { "private, max-age=\($0)" }
            ?? "private, max-age=0, must-revalidate, no-transform"
        let validators = [("ETag", etag), ("Cache-Control", cacheControl)]
        if notModified {
            return (Answer(status: 304, headers: validators, body: Data()), cost)
        }
        let body = if let ids = listedIDs(path: path, query: query) {
            idListBody(path: path, query: query, ids: ids, etag: etag, state: state)
        } else {
            resourceBody(path: path, key: key, version: version, etag: etag, padding: state.behaviour.bodyPadding)
        }
        return (Answer(status: 200, headers: json + validators, body: method == "HEAD" ? Data() : body), cost)
    }

    /// The resource a request names: its path and query, minus credentials, parameters sorted.
    static func resourceKey(path: String, query: String) -> String {
        let credentials: Set<String> = ["key", "access_token", "quotaUser"]
        let items = query.split(separator: "&").filter { item in
            let name = item.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return !credentials.contains(name)
        }
        return path + "?" + items.sorted().joined(separator: "&")
    }

    /// YouTube Data API v3 prices: in the current model `search.list` and `videos.insert` cost 1
    /// in buckets of their own; in the single pool search costs 100 and an upload 1,600. Captions
    /// list 50, other reads 1, other writes 50, in the shared bucket.
    static func price(method: String, path: String, model: FakeAPIBehaviour.QuotaModel) -> (bucket: String, units: Int) {
        let resource = path.split(separator: "/").last.map(String.init) ?? ""
        let isRead = method == "GET" || method == "HEAD"
        switch (isRead, resource, model) {
        case (true, "search", .separateSearchAndUpload): return ("youtube.search", 1)
        case (true, "search", .singlePool): return ("youtube", 100)
        case (true, "captions", _): return ("youtube", 50)
        case (true, _, _): return ("youtube", 1)
        case (false, "videos", .separateSearchAndUpload) where method == "POST": return ("youtube.videos.insert", 1)
        case (false, "videos", .singlePool) where method == "POST": return ("youtube", 1600)
        default: return ("youtube", 50)
        }
    }

    static func entityTag(key: String, version: Int, weak: Bool) -> String {
        let hash = FNV1a.hash("\(key)#\(version)".utf8)
        let tag = "\"" + String(hash, radix: 36) + "\""
        return weak ? "W/" + tag : tag
    }

    /// RFC 9110 weak comparison against a list of entity tags, or `*`.
    static func matches(ifNoneMatch: String?, etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        func opaque(_ tag: Substring) -> Substring {
            let trimmed = tag.trimmingCharacters(in: .whitespaces)
            return Substring(trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed)
        }
        if ifNoneMatch.trimmingCharacters(in: .whitespaces) == "*" { return true }
        return ifNoneMatch.split(separator: ",").contains { opaque($0) == opaque(Substring(etag)) }
    }

    /// The IDs of a list of videos, channels or playlists by `id` (`id=a,b,c`, as YouTube takes up to 50).
    static func listedIDs(path: String, query: String) -> [String]? {
        guard ["/youtube/v3/videos", "/youtube/v3/channels", "/youtube/v3/playlists"].contains(path) else { return nil }
        for item in query.split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == "id" else { continue }
            let value = String(parts[1]).removingPercentEncoding ?? String(parts[1])
            return value.split(separator: ",").map(String.init)
        }
        return nil
    }

    /// YouTube's envelope for a list by ID: one item per known ID, in the order asked, each as
    /// the list of that ID alone would carry it (its revision is that single list's), with the
    /// parts asked for.
    private static func idListBody(path: String, query: String, ids: [String], etag: String, state: State) -> Data {
        let resource = path.split(separator: "/").last.map(String.init) ?? "resource"
        let singular = resource.hasSuffix("s") ? String(resource.dropLast()) : resource
        let otherItems = query.split(separator: "&").filter { !$0.hasPrefix("id=") }
        let parts = otherItems.first { $0.hasPrefix("part=") }
            .map { String($0.dropFirst(5)).removingPercentEncoding ?? "" }?.split(separator: ",").map(String.init) ?? ["snippet"]
        var items: [[String: Any]] = []
        for id in ids where !state.behaviour.unknownIDs.contains(id) {
            let single = resourceKey(path: path, query: (["id=\(id)"] + otherItems.map(String.init)).joined(separator: "&"))
            let version = state.versions[single, default: 1]
            var item: [String: Any] = [
                "kind": "youtube#\(singular)", "id": id, "revision": version,
                "etag": entityTag(key: single, version: version, weak: false).replacingOccurrences(of: "\"", with: ""),
            ]
            for part in parts {
                switch part {
                case "snippet": item["snippet"] = ["title": "\(resource) \(single) (revision \(version))"]
                case "statistics": item["statistics"] = ["viewCount": String(FNV1a.hash("\(id)#\(version)".utf8) % 100_000)]
                default: item[part] = [String: Any]()
                }
            }
            items.append(item)
        }
        let object: [String: Any] = [
            "kind": "youtube#\(singular)ListResponse",
            "etag": etag,
            "items": items,
            "pageInfo": ["totalResults": items.count, "resultsPerPage": items.count],
            "padding": String(repeating: "x", count: max(0, state.behaviour.bodyPadding)),
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    static func resourceBody(path: String, key: String, version: Int, etag: String, padding: Int) -> Data {
        let resource = path.split(separator: "/").last.map(String.init) ?? "resource"
        let object: [String: Any] = [
            "kind": "youtube#\(resource)ListResponse",
            "etag": etag,
            "items": [[
                "kind": "youtube#\(resource)",
                "id": key,
                "revision": version,
                "snippet": ["title": "\(resource) \(key) (revision \(version))"],
            ] as [String: Any]],
            "pageInfo": ["totalResults": 1, "resultsPerPage": 1],
            "padding": String(repeating: "x", count: max(0, padding)),
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }
}
