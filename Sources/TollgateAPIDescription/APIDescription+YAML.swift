import Foundation
import HTTPTypes
import Tollgate
import Yams

extension APIDescription {
    /// Reads a description from its YAML text, checking every key and value.
    /// - Parameters:
    ///   - yaml: The text.
    ///   - file: The file's name, for errors.
    /// - Throws: ``APIDescriptionError`` naming the file, line, column and key of the first problem.
    public init(yaml: String, file: String = "<text>") throws(APIDescriptionError) {
        let root: Node
        do {
            guard let composed = try Yams.compose(yaml: yaml) else {
                throw APIDescriptionError(file: file, line: nil, column: nil, key: "", message: "the file is empty")
            }
            root = composed
        } catch let error as APIDescriptionError {
            throw error
        } catch let error as YamlError {
            let mark = Self.mark(of: error)
            throw APIDescriptionError(file: file, line: mark?.line, column: mark?.column, key: "",
                                      message: "not valid YAML: \(Self.problem(of: error))")
        } catch {
            throw APIDescriptionError(file: file, line: nil, column: nil, key: "", message: "not valid YAML: \(error)")
        }
        try Self.refuseAliasFanOut(root, file: file)
        var reader = DescriptionReader(file: file)
        self = try reader.description(root)
    }

    /// The most values a description may hold once its YAML aliases are expanded. A real description
    /// holds hundreds; an anchored list of thousands reused thousands of times (a few kilobytes of
    /// text) would hold millions and take every command that reads it minutes and gigabytes.
    public static let maximumExpandedValues = 200_000

    /// Refuses a tree whose aliases expand past ``maximumExpandedValues``, counting without expanding.
    private static func refuseAliasFanOut(_ root: Node, file: String) throws(APIDescriptionError) {
        var count = 0
        var pending: [Node] = [root]
        while let node = pending.popLast() {
            count += 1
            if count > maximumExpandedValues {
                throw APIDescriptionError(
                    file: file, line: node.mark?.line, column: node.mark?.column, key: "",
                    message: "the file expands to more than \(maximumExpandedValues) values once its YAML aliases (*name) are expanded; write the repeated part once per use, or fewer times")
            }
            switch node {
            case .scalar, .alias: continue
            case .mapping(let mapping):
                for (key, value) in mapping {
                    pending.append(key)
                    pending.append(value)
                }
            case .sequence(let sequence):
                pending.append(contentsOf: sequence)
            }
        }
    }

    /// Reads a description file.
    /// - Parameter path: The file's path.
    /// - Returns: The description.
    /// - Throws: ``APIDescriptionError`` when it cannot be read or is not a valid description.
    public static func load(from path: String) throws(APIDescriptionError) -> APIDescription {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APIDescriptionError(file: path, line: nil, column: nil, key: "", message: "the file cannot be read")
        }
        return try APIDescription(yaml: String(decoding: data, as: UTF8.self), file: path)
    }

    private static func mark(of error: YamlError) -> Mark? {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark
        case .duplicatedKeysInMapping(_, let context): context.mark
        default: nil
        }
    }

    private static func problem(of error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _): problem
        case .duplicatedKeysInMapping(let duplicates, _):
            "a key is given twice: \(duplicates.joined(separator: ", "))"
        case .reader(let problem, _, _, _): problem
        default: "\(error)"
        }
    }
}

/// Walks the YAML tree, keeping the key path for errors.
struct DescriptionReader {
    let file: String
    /// The deprecated keys read so far, one line each.
    var deprecations: [String] = []

    func fail(_ node: Node?, _ key: String, _ message: String) -> APIDescriptionError {
        APIDescriptionError(file: file, line: node?.mark?.line, column: node?.mark?.column, key: key, message: message)
    }

    /// A mapping's entries by key, refusing keys that are not in `allowed` (a typo is an error, not a silent default).
    func mapping(_ node: Node, _ key: String, allowed: Set<String>) throws(APIDescriptionError) -> [String: Node] {
        guard let mapping = node.mapping else { throw fail(node, key, "expected a mapping of keys to values") }
        var entries: [String: Node] = [:]
        for (name, value) in mapping {
            guard let text = name.string else { throw fail(name, key, "a key must be text") }
            let path = key.isEmpty ? text : "\(key).\(text)"
            guard !Self.hasControlCharacters(text) else {
                throw fail(name, key, "control characters (ESC, newlines, tabs…) are not allowed in a key")
            }
            guard allowed.isEmpty || allowed.contains(text) else {
                throw fail(name, path, "unknown key; expected one of \(allowed.sorted().joined(separator: ", "))")
            }
            guard entries[text] == nil else { throw fail(name, path, "given twice") }
            entries[text] = value
        }
        return entries
    }

    /// Text without control characters: every name and value of a description reaches a terminal
    /// (`api show`, `status`, `quota show`), the ledger and the logs, where an ESC or a newline
    /// would rewrite what an operator sees.
    func string(_ node: Node, _ key: String) throws(APIDescriptionError) -> String {
        guard let text = node.scalar?.string, !text.isEmpty else { throw fail(node, key, "expected text") }
        guard !Self.hasControlCharacters(text) else {
            throw fail(node, key, "control characters (ESC, newlines, tabs…) are not allowed here")
        }
        return text
    }

    static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    func int(_ node: Node, _ key: String, in range: ClosedRange<Int>) throws(APIDescriptionError) -> Int {
        guard let text = node.scalar?.string, let value = Int(text.replacingOccurrences(of: "_", with: "")) else {
            throw fail(node, key, "expected a whole number")
        }
        guard range.contains(value) else {
            throw fail(node, key, "\(value) is out of range; expected \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    func double(_ node: Node, _ key: String) throws(APIDescriptionError) -> Double {
        guard let text = node.scalar?.string, let value = Double(text), value.isFinite, value >= 0 else {
            throw fail(node, key, "expected a number, zero or more")
        }
        return value
    }

    func bool(_ node: Node, _ key: String) throws(APIDescriptionError) -> Bool {
        switch node.scalar?.string.lowercased() {
        case "true", "yes": return true
        case "false", "no": return false
        default: throw fail(node, key, "expected true or false")
        }
    }

    /// The longest duration a description may give: 366 days, a leap year's calendar (the
    /// longest window, circuit or retry delay anyone means). Longer ones are refused at their line,
    /// never converted: `1e16s` would trap in the conversion to milliseconds.
    static let maximumDurationSeconds: Double = 366 * 86_400

    /// `60s`, `1h`, `500ms`, `2m`, `1d`, or a number of seconds; at most ``maximumDurationSeconds``.
    func duration(_ node: Node, _ key: String) throws(APIDescriptionError) -> Duration {
        guard let text = node.scalar?.string.trimmingCharacters(in: .whitespaces) else {
            throw fail(node, key, "expected a duration such as 60s, 5m, 1h or 500ms")
        }
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        var seconds: Double?
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            if let value = Double(text.dropLast(suffix.count)), value > 0, value.isFinite {
                seconds = value * scale
                break
            }
        }
        if seconds == nil, let value = Double(text), value > 0, value.isFinite { seconds = value }
        guard let seconds else { throw fail(node, key, "'\(text)' is not a duration; write 60s, 5m, 1h or 500ms") }
        guard seconds >= 0.001 else {
            throw fail(node, key, "'\(text)' is shorter than a millisecond, the shortest duration the gate counts")
        }
        guard seconds <= Self.maximumDurationSeconds else {
            throw fail(node, key, "'\(text)' is longer than 366 days, the longest duration a description may give")
        }
        return .milliseconds(SaturatingConversion.int64((seconds * 1000).rounded()))
    }

    mutating func description(_ root: Node) throws(APIDescriptionError) -> APIDescription {
        let top = try mapping(root, "", allowed: [
            "api", "upstream", "buckets", "defaults", "routes", "endpoints", "secrets", "quota_exhausted", "rewrite_urls",
        ])
        guard let nameNode = top["api"] else { throw fail(root, "api", "missing: name the API (api: GitHub REST)") }
        let name = try string(nameNode, "api")
        var upstream: URL?
        if let node = top["upstream"] {
            let text = try string(node, "upstream")
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
                  url.host != nil
            else { throw fail(node, "upstream", "'\(text)' is not an http or https URL") }
            upstream = url
        }
        guard let bucketsNode = top["buckets"] else { throw fail(root, "buckets", "missing: at least one bucket") }
        var buckets: [String: APIDescription.Bucket] = [:]
        for (bucketName, node) in try mapping(bucketsNode, "buckets", allowed: []) {
            buckets[bucketName] = try bucket(node, "buckets.\(bucketName)")
        }
        guard !buckets.isEmpty else { throw fail(bucketsNode, "buckets", "at least one bucket") }
        guard let defaultsNode = top["defaults"] else { throw fail(root, "defaults", "missing: at least the default bucket") }
        let defaults = try self.defaults(defaultsNode, buckets: buckets)
        var routes: [APIDescription.Route] = []
        if let node = top["routes"] {
            guard let sequence = node.sequence else { throw fail(node, "routes", "expected a list of routes") }
            for (index, routeNode) in sequence.enumerated() {
                routes.append(try route(routeNode, "routes[\(index)]"))
            }
        }
        var endpoints: [String: APIDescription.Endpoint] = [:]
        if let node = top["endpoints"] {
            for (endpointName, endpointNode) in try mapping(node, "endpoints", allowed: []) {
                endpoints[endpointName] = try endpoint(endpointNode, "endpoints.\(endpointName)", buckets: buckets)
            }
        }
        var secrets = APIDescription.Secrets(parameters: [], headers: [])
        if let node = top["secrets"] {
            let entries = try mapping(node, "secrets", allowed: ["parameters", "headers"])
            secrets.parameters = try entries["parameters"].map { node throws(APIDescriptionError) in try strings(node, "secrets.parameters") } ?? []
            secrets.headers = try entries["headers"].map { node throws(APIDescriptionError) in try strings(node, "secrets.headers") } ?? []
        }
        var rules: [APIDescription.ExhaustionRule] = []
        if let node = top["quota_exhausted"] {
            guard let sequence = node.sequence else { throw fail(node, "quota_exhausted", "expected a list of answers") }
            for (index, ruleNode) in sequence.enumerated() {
                rules.append(try exhaustionRule(ruleNode, "quota_exhausted[\(index)]"))
            }
        }
        var description = APIDescription(name: name, upstream: upstream, buckets: buckets, defaults: defaults, routes: routes,
                                         endpoints: endpoints, secrets: secrets, quotaExhausted: rules)
        if let node = top["rewrite_urls"] { description.rewriteURLs = try urlRewriting(node, "rewrite_urls") }
        description.deprecations = deprecations
        return description
    }

    /// `{bodies: [application/json]}`: media types written `type/subtype`.
    func urlRewriting(_ node: Node, _ key: String) throws(APIDescriptionError) -> APIDescription.URLRewriting {
        let entries = try mapping(node, key, allowed: ["bodies"])
        var rewriting = APIDescription.URLRewriting()
        guard let bodiesNode = entries["bodies"] else { return rewriting }
        let tokenCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~")
        for (index, type) in try strings(bodiesNode, "\(key).bodies").enumerated() {
            let parts = type.lowercased().split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.unicodeScalars.allSatisfy(tokenCharacters.contains) })
            else {
                throw fail(bodiesNode.sequence?[index] ?? bodiesNode, "\(key).bodies",
                           "'\(type)' is not a media type; write it as type/subtype, such as application/json")
            }
            rewriting.bodies.append(type.lowercased())
        }
        return rewriting
    }

    func strings(_ node: Node, _ key: String) throws(APIDescriptionError) -> [String] {
        guard let sequence = node.sequence else { throw fail(node, key, "expected a list") }
        var values: [String] = []
        for (index, item) in sequence.enumerated() { values.append(try string(item, "\(key)[\(index)]")) }
        return values
    }

    func bucket(_ node: Node, _ key: String) throws(APIDescriptionError) -> APIDescription.Bucket {
        let entries = try mapping(node, key, allowed: ["limit", "window", "announced", "pacing"])
        guard let limitNode = entries["limit"] else { throw fail(node, "\(key).limit", "missing") }
        let limit = try int(limitNode, "\(key).limit", in: 0...QuotaLimits.maximumUnits)
        let window = try entries["window"].map { node throws(APIDescriptionError) in try self.window(node, "\(key).window") }
            ?? .day(timeZone: APIDescription.pacificTimeZone)
        var bucket = APIDescription.Bucket(limit: limit, window: window)
        if let node = entries["announced"] { bucket.announced = try announced(node, "\(key).announced") }
        if let node = entries["pacing"] { bucket.pacing = try pacing(node, "\(key).pacing") }
        return bucket
    }

    /// `announced: core` (the limit the server names so), `announced: requests` or
    /// `announced: {policy: core, unit: requests}`; units are requests, tokens, input_tokens, output_tokens.
    func announced(_ node: Node, _ key: String) throws(APIDescriptionError) -> QuotaConfiguration.AnnouncedLimitSelector {
        func unit(_ text: String) -> AnnouncedLimit.Unit? {
            switch text {
            case "requests": .requests
            case "tokens": .tokens
            case "input_tokens": .inputTokens
            case "output_tokens": .outputTokens
            default: nil
            }
        }
        if let text = node.scalar?.string {
            return unit(text).map { .init(unit: $0) } ?? .init(policy: text)
        }
        let entries = try mapping(node, key, allowed: ["policy", "unit"])
        var selector = QuotaConfiguration.AnnouncedLimitSelector()
        if let policy = entries["policy"] { selector.policy = try string(policy, "\(key).policy") }
        if let unitNode = entries["unit"] {
            let text = try string(unitNode, "\(key).unit")
            guard let parsed = unit(text) else {
                throw fail(unitNode, "\(key).unit", "'\(text)' is not a unit; write requests, tokens, input_tokens or output_tokens")
            }
            selector.unit = parsed
        }
        return selector
    }

    /// `pacing: {keep: 10%}`: keep that share of the limit back and spread the rest evenly.
    func pacing(_ node: Node, _ key: String) throws(APIDescriptionError) -> QuotaPacing {
        let entries = try mapping(node, key, allowed: ["keep"])
        guard let keepNode = entries["keep"] else { return QuotaPacing() }
        let text = try string(keepNode, "\(key).keep").trimmingCharacters(in: .whitespaces)
        let fraction: Double? = text.hasSuffix("%") ? Double(text.dropLast()).map { $0 / 100 } : Double(text)
        guard let fraction, (0...1).contains(fraction) else {
            throw fail(keepNode, "\(key).keep", "write a share of the limit from 0% to 100% (such as 10%)")
        }
        return QuotaPacing(reserveFraction: fraction)
    }

    /// `actual_cost: {body: usage.total_tokens}`, `{body: usage.input_tokens + usage.output_tokens}`
    /// or `{header: x-usage-tokens, bucket: tokens}`.
    func actualCost(
        _ node: Node, _ key: String, knownBucket: (Node, String) throws(APIDescriptionError) -> String
    ) throws(APIDescriptionError) -> QuotaConfiguration.ActualCost {
        let entries = try mapping(node, key, allowed: ["body", "header", "bucket"])
        let source: QuotaConfiguration.ActualCost.Source
        switch (entries["body"], entries["header"]) {
        case (let body?, nil):
            let terms = try string(body, "\(key).body").split(separator: "+", omittingEmptySubsequences: false)
            let paths = terms.map { $0.trimmingCharacters(in: .whitespaces).split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
            guard !paths.contains(where: { $0.contains(where: \.isEmpty) }) else {
                throw fail(body, "\(key).body", "write a path of keys such as usage.total_tokens, or paths joined by +")
            }
            source = paths.count == 1 ? .jsonBody(path: paths[0]) : .jsonBodySum(paths: paths)
        case (nil, let header?):
            let text = try string(header, "\(key).header")
            guard let name = HTTPField.Name(text) else { throw fail(header, "\(key).header", "'\(text)' is not a field name") }
            source = .header(name)
        default:
            throw fail(node, key, "give body (a JSON path) or header (a field name), one of them")
        }
        let bucket = try entries["bucket"].map { node throws(APIDescriptionError) in try knownBucket(node, "\(key).bucket") }
        return QuotaConfiguration.ActualCost(bucket: bucket, source: source)
    }

    /// `day`, `hour`, `minute`, `month`, `{day: Europe/Paris}`, `{month: UTC}`, `{rolling: 5m}`.
    func window(_ node: Node, _ key: String) throws(APIDescriptionError) -> APIDescription.Window {
        if let text = node.scalar?.string {
            switch text {
            case "day": return .day(timeZone: APIDescription.pacificTimeZone)
            case "hour": return .hour
            case "minute": return .minute
            case "month": return .month(timeZone: APIDescription.pacificTimeZone)
            default: throw fail(node, key, "'\(text)' is not a window; write day, hour, minute, month, {day: ZONE} or {rolling: 5m}")
            }
        }
        let entries = try mapping(node, key, allowed: ["day", "month", "rolling"])
        guard entries.count == 1, let (kind, value) = entries.first else {
            throw fail(node, key, "one of day, month or rolling")
        }
        switch kind {
        case "rolling":
            let seconds = try duration(value, "\(key).rolling").components.seconds
            guard QuotaWindow.rollingSeconds.contains(Int(seconds)) else {
                throw fail(value, "\(key).rolling", "from one second to 366 days")
            }
            return .rolling(seconds: Int(seconds))
        default:
            let zone = try string(value, "\(key).\(kind)")
            // The ledger's own rule: a full IANA name this machine knows, never an abbreviation.
            guard QuotaWindow.isKnownTimeZone(zone) else {
                throw fail(value, "\(key).\(kind)", "'\(zone)' is not a time zone; write one such as America/Los_Angeles or UTC")
            }
            return kind == "day" ? .day(timeZone: zone) : .month(timeZone: zone)
        }
    }

    /// `not_modified_cost: 0 | 1 | N | full`, or the deprecated `refund_not_modified: true|false`
    /// (true is 0, false is full), noted in ``deprecations``; nil when neither is given.
    mutating func notModifiedCost(_ entries: [String: Node], _ key: String) throws(APIDescriptionError) -> NotModifiedCost? {
        let path = key.isEmpty ? "" : "\(key)."
        switch (entries["not_modified_cost"], entries["refund_not_modified"]) {
        case (nil, nil):
            return nil
        case (let node?, nil):
            if node.scalar?.string.lowercased() == "full" { return .full }
            guard let text = node.scalar?.string, Int(text.replacingOccurrences(of: "_", with: "")) != nil else {
                throw fail(node, "\(path)not_modified_cost", "write the units a 304 costs (0, 1, …) or full")
            }
            return .units(try int(node, "\(path)not_modified_cost", in: 0...QuotaLimits.maximumUnits))
        case (nil, let node?):
            let refunds = try bool(node, "\(path)refund_not_modified")
            let line = node.mark.map { ":\($0.line)" } ?? ""
            deprecations.append("\(file)\(line): \(path)refund_not_modified is deprecated; write not_modified_cost: "
                + (refunds ? "0 (a 304 is free)" : "full (a 304 costs the call's price)")
                + ", or the units a 304 costs as the API documents it (YouTube: 1)")
            return refunds ? .free : .full
        case (_?, let node?):
            throw fail(node, "\(path)refund_not_modified", "give not_modified_cost only (refund_not_modified is deprecated)")
        }
    }

    mutating func defaults(_ node: Node, buckets: [String: APIDescription.Bucket]) throws(APIDescriptionError) -> APIDescription.Defaults {
        let entries = try mapping(node, "defaults", allowed: ["bucket", "cost", "not_modified_cost", "refund_not_modified",
                                                              "throttle", "circuit", "retry", "fresh_for"])
        guard let bucketNode = entries["bucket"] else { throw fail(node, "defaults.bucket", "missing: the bucket of endpoints that name none") }
        let bucket = try string(bucketNode, "defaults.bucket")
        guard buckets[bucket] != nil else { throw fail(bucketNode, "defaults.bucket", "no bucket named '\(bucket)' under buckets") }
        return APIDescription.Defaults(
            bucket: bucket,
            cost: try entries["cost"].map { node throws(APIDescriptionError) in try int(node, "defaults.cost", in: 0...QuotaLimits.maximumUnits) } ?? 1,
            notModifiedCost: try notModifiedCost(entries, "defaults") ?? .full,
            throttle: try entries["throttle"].map { node throws(APIDescriptionError) in try throttle(node, "defaults.throttle") }
                ?? ThrottleConfiguration().defaultLimit,
            circuit: try entries["circuit"].map { node throws(APIDescriptionError) in try circuit(node, "defaults.circuit") } ?? CircuitPolicy(),
            retry: try entries["retry"].map { node throws(APIDescriptionError) in try retry(node, "defaults.retry") } ?? .default,
            freshFor: try entries["fresh_for"].map { node throws(APIDescriptionError) in try freshFor(node, "defaults.fresh_for") }
        )
    }

    /// `fresh_for: 5m`, or `{min: 1m, max: 1h, follow_budget: true, stale_if_error: 1h,
    /// stale_while_revalidate: 1m}` (max defaults to min; a lifetime that follows the budget needs a
    /// max above its min).
    func freshFor(_ node: Node, _ key: String) throws(APIDescriptionError) -> ChosenFreshness {
        if node.scalar != nil { return ChosenFreshness(try duration(node, key)) }
        let entries = try mapping(node, key, allowed: ["min", "max", "follow_budget", "stale_if_error", "stale_while_revalidate"])
        guard let minimumNode = entries["min"] else { throw fail(node, "\(key).min", "missing: write {min: 1m, max: 1h, follow_budget: true}") }
        let minimum = try duration(minimumNode, "\(key).min")
        let maximum = try entries["max"].map { node throws(APIDescriptionError) in try duration(node, "\(key).max") } ?? minimum
        guard maximum >= minimum else { throw fail(entries["max"], "\(key).max", "at least min") }
        let follows = try entries["follow_budget"].map { node throws(APIDescriptionError) in try bool(node, "\(key).follow_budget") } ?? false
        if follows, maximum == minimum {
            throw fail(entries["max"] ?? node, "\(key).max", "following the budget needs a max above min to stretch to")
        }
        return ChosenFreshness(
            minimum: minimum, maximum: maximum, followsBudget: follows,
            staleIfError: try entries["stale_if_error"].map { node throws(APIDescriptionError) in try duration(node, "\(key).stale_if_error") },
            staleWhileRevalidate: try entries["stale_while_revalidate"].map { node throws(APIDescriptionError) in
                try duration(node, "\(key).stale_while_revalidate")
            }
        )
    }

    /// `{requests: 30, per: 60s}`.
    func throttle(_ node: Node, _ key: String) throws(APIDescriptionError) -> ThrottleLimit {
        let entries = try mapping(node, key, allowed: ["requests", "per"])
        guard let requests = entries["requests"], let per = entries["per"] else {
            throw fail(node, key, "write {requests: 30, per: 60s}")
        }
        return ThrottleLimit(requests: try int(requests, "\(key).requests", in: 1...1_000_000),
                             per: try duration(per, "\(key).per"))
    }

    /// `{failures: 5, open: 60s, rate_limit_open: 1h}`.
    func circuit(_ node: Node, _ key: String) throws(APIDescriptionError) -> CircuitPolicy {
        let entries = try mapping(node, key, allowed: ["failures", "open", "rate_limit_open"])
        var policy = CircuitPolicy()
        if let node = entries["failures"] { policy.failureThreshold = try int(node, "\(key).failures", in: 1...1_000) }
        if let node = entries["open"] { policy.openDuration = try duration(node, "\(key).open") }
        if let node = entries["rate_limit_open"] { policy.rateLimitOpenDuration = try duration(node, "\(key).rate_limit_open") }
        return policy
    }

    /// `{max_retries: 3, initial_delay: 1s, multiplier: 2, max_delay: 60s, jitter: 0.2}`.
    func retry(_ node: Node, _ key: String) throws(APIDescriptionError) -> RetryPolicy {
        let entries = try mapping(node, key, allowed: ["max_retries", "initial_delay", "multiplier", "max_delay", "jitter"])
        var policy = RetryPolicy.default
        if let node = entries["max_retries"] { policy.maximumRetries = try int(node, "\(key).max_retries", in: 0...10) }
        if let node = entries["initial_delay"] { policy.initialDelay = try duration(node, "\(key).initial_delay") }
        if let node = entries["multiplier"] { policy.multiplier = try double(node, "\(key).multiplier") }
        if let node = entries["max_delay"] { policy.maximumDelay = try duration(node, "\(key).max_delay") }
        if let node = entries["jitter"] {
            let jitter = try double(node, "\(key).jitter")
            guard jitter <= 1 else { throw fail(node, "\(key).jitter", "at most 1") }
            policy.jitter = jitter
        }
        return policy
    }

    /// `{parameter: id, separator: ",", max: 50, items: items, item_key: id, wait: 10ms}`: every
    /// field but `parameter` may be left out (`,`, 50, `items`, `id`, 10 ms).
    func batch(_ node: Node, _ key: String) throws(APIDescriptionError) -> BatchPolicy {
        let entries = try mapping(node, key, allowed: ["parameter", "separator", "max", "items", "item_key", "wait"])
        guard let parameterNode = entries["parameter"] else {
            throw fail(node, key, "name the parameter that takes the IDs: {parameter: id, max: 50}")
        }
        func text(_ name: String, _ fallback: String) throws(APIDescriptionError) -> String {
            guard let node = entries[name] else { return fallback }
            let value = try string(node, "\(key).\(name)")
            guard !value.isEmpty, value.count <= 64 else { throw fail(node, "\(key).\(name)", "expected 1 to 64 characters") }
            return value
        }
        var wait = Duration.milliseconds(10)
        if let node = entries["wait"] {
            wait = try duration(node, "\(key).wait")
            // The first caller of a batch waits this long for others: milliseconds, not minutes.
            guard wait <= .seconds(1) else { throw fail(node, "\(key).wait", "expected at most 1s, such as 10ms") }
        }
        return BatchPolicy(
            parameter: try text("parameter", try string(parameterNode, "\(key).parameter")),
            separator: try text("separator", ","),
            maximum: try entries["max"].map { node throws(APIDescriptionError) in try int(node, "\(key).max", in: 1...1000) } ?? 50,
            itemsField: try text("items", "items"),
            itemKey: try text("item_key", "id"),
            wait: wait
        )
    }

    /// `{method: GET, path: /youtube/v3/{resource}, endpoint: "{resource}.list"}`.
    func route(_ node: Node, _ key: String) throws(APIDescriptionError) -> APIDescription.Route {
        let entries = try mapping(node, key, allowed: ["method", "path", "endpoint"])
        guard let pathNode = entries["path"], let endpointNode = entries["endpoint"] else {
            throw fail(node, key, "write {method: GET, path: /items/{id}, endpoint: items.get}")
        }
        var methods: Set<String> = []
        if let methodNode = entries["method"] {
            let given = methodNode.sequence != nil ? try strings(methodNode, "\(key).method") : [try string(methodNode, "\(key).method")]
            for method in given where method != "*" {
                guard method.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
                    throw fail(methodNode, "\(key).method", "'\(method)' is not a method; write GET, POST… or *")
                }
                methods.insert(method)
            }
        }
        let path = try string(pathNode, "\(key).path")
        guard path.hasPrefix("/") else { throw fail(pathNode, "\(key).path", "a path starts with /") }
        var parameters: Set<String> = []
        let segments = try path.split(separator: "/").map { piece throws(APIDescriptionError) -> APIDescription.Route.Segment in
            guard piece.hasPrefix("{") && piece.hasSuffix("}") else {
                guard !piece.contains("{") && !piece.contains("}") else {
                    throw fail(pathNode, "\(key).path", "a parameter is a whole segment, such as /items/{id}")
                }
                return .literal(String(piece))
            }
            let name = String(piece.dropFirst().dropLast())
            guard !name.isEmpty, parameters.insert(name).inserted else {
                throw fail(pathNode, "\(key).path", "parameter names must be present and differ")
            }
            return .parameter(name)
        }
        let endpoint = try string(endpointNode, "\(key).endpoint")
        for used in Self.placeholders(in: endpoint) where !parameters.contains(used) {
            throw fail(endpointNode, "\(key).endpoint", "{\(used)} is not a parameter of the path")
        }
        return APIDescription.Route(methods: methods, segments: segments, endpoint: endpoint)
    }

    static func placeholders(in template: String) -> [String] {
        var names: [String] = []
        var rest = template[...]
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            names.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return names
    }

    mutating func endpoint(
        _ node: Node, _ key: String, buckets: [String: APIDescription.Bucket]
    ) throws(APIDescriptionError) -> APIDescription.Endpoint {
        let entries = try mapping(node, key, allowed: ["cost", "bucket", "charges", "not_modified_cost", "refund_not_modified",
                                                       "throttle", "circuit", "actual_cost", "retry", "fresh_for", "batch"])
        var endpoint = APIDescription.Endpoint()
        func knownBucket(_ node: Node, _ key: String) throws(APIDescriptionError) -> String {
            let name = try string(node, key)
            guard buckets[name] != nil else { throw fail(node, key, "no bucket named '\(name)' under buckets") }
            return name
        }
        if let chargesNode = entries["charges"] {
            guard entries["cost"] == nil, entries["bucket"] == nil else {
                throw fail(chargesNode, "\(key).charges", "give charges, or cost and bucket, not both")
            }
            guard let sequence = chargesNode.sequence, !sequence.isEmpty else {
                throw fail(chargesNode, "\(key).charges", "expected a list of {bucket: B, units: N}")
            }
            var charges: [QuotaConfiguration.BucketCharge] = []
            for (index, item) in sequence.enumerated() {
                let path = "\(key).charges[\(index)]"
                let charge = try mapping(item, path, allowed: ["bucket", "units"])
                guard let bucket = charge["bucket"], let units = charge["units"] else { throw fail(item, path, "write {bucket: B, units: N}") }
                charges.append(.init(bucket: try knownBucket(bucket, "\(path).bucket"),
                                     units: try int(units, "\(path).units", in: 0...QuotaLimits.maximumUnits)))
            }
            endpoint.charges = charges
        } else if entries["cost"] != nil || entries["bucket"] != nil {
            if let node = entries["bucket"] { endpoint.bucket = try knownBucket(node, "\(key).bucket") }
            if let node = entries["cost"] { endpoint.cost = try int(node, "\(key).cost", in: 0...QuotaLimits.maximumUnits) }
        }
        endpoint.notModifiedCost = try notModifiedCost(entries, key)
        if let node = entries["throttle"] { endpoint.throttle = try throttle(node, "\(key).throttle") }
        if let node = entries["circuit"] { endpoint.circuit = try circuit(node, "\(key).circuit") }
        if let node = entries["retry"] { endpoint.retry = try retry(node, "\(key).retry") }
        if let node = entries["batch"] { endpoint.batch = try batch(node, "\(key).batch") }
        if let node = entries["fresh_for"] { endpoint.freshFor = try freshFor(node, "\(key).fresh_for") }
        if let node = entries["actual_cost"] {
            let actual = try actualCost(node, "\(key).actual_cost", knownBucket: knownBucket)
            let charged = endpoint.charges?.map(\.bucket) ?? [endpoint.bucket].compactMap { $0 }
            if let bucket = actual.bucket, !charged.isEmpty, !charged.contains(bucket) {
                throw fail(node, "\(key).actual_cost.bucket", "\(key) is not charged in bucket '\(bucket)'")
            }
            endpoint.actualCost = actual
        }
        return endpoint
    }

    /// `{status: 403, reason: quotaExceeded}` or `{status: 403, header: "X-RateLimit-Remaining: 0"}`.
    func exhaustionRule(_ node: Node, _ key: String) throws(APIDescriptionError) -> APIDescription.ExhaustionRule {
        let entries = try mapping(node, key, allowed: ["status", "header", "reason"])
        guard let statusNode = entries["status"] else { throw fail(node, "\(key).status", "missing") }
        var rule = APIDescription.ExhaustionRule(status: try int(statusNode, "\(key).status", in: 100...599))
        if let headerNode = entries["header"] {
            let text = try string(headerNode, "\(key).header")
            let parts = text.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty else { throw fail(headerNode, "\(key).header", "write \"Name: value\"") }
            rule.header = (parts[0], parts[1])
        }
        if let reasonNode = entries["reason"] { rule.reason = try string(reasonNode, "\(key).reason") }
        return rule
    }
}

extension APIDescription {
    /// A shipped description (`youtube-v3`, `youtube-v3-single-pool`, …) or a file: what
    /// `--api NAME_OR_PATH` names.
    /// - Parameter nameOrPath: A shipped description's name, or a file's path.
    /// - Returns: The description.
    /// - Throws: ``APIDescriptionError`` when it names neither, or is not a valid description.
    public static func named(_ nameOrPath: String) throws(APIDescriptionError) -> APIDescription {
        // A file of the operator's wins over a shipped description of the same name: the name was
        // typed to mean the file in front of them.
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: nameOrPath, isDirectory: &isDirectory), !isDirectory.boolValue {
            return try load(from: nameOrPath)
        }
        if let text = shippedTexts[nameOrPath] { return try APIDescription(yaml: text, file: "\(nameOrPath) (shipped)") }
        guard FileManager.default.fileExists(atPath: nameOrPath) else {
            throw APIDescriptionError(
                file: nameOrPath, line: nil, column: nil, key: "",
                message: "no such file, and no shipped description of that name (shipped: "
                    + "\(shippedTexts.keys.sorted().joined(separator: ", ")))"
            )
        }
        return try load(from: nameOrPath)
    }
}
