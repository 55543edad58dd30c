import Foundation
import HTTPTypes
import Testing
import Tollgate
@testable import TollgateAPIDescription

@Suite("API description files: read, checked with file, line and key, and turned into the gate's rules")
struct APIDescriptionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("the shipped YouTube descriptions equal the library's Swift presets, rule for rule")
    func youTubeEqualsPreset() throws {
        var described = try APIDescription.named("youtube-v3").gateConfiguration()
        // A description's routes name endpoints it need not list, so its ledger does not warn of
        // them; the Swift preset does. That is how unlisted endpoints are logged, not a rule.
        #expect(described.quota.chargesUnlistedEndpointsTheDefault)
        described.quota.chargesUnlistedEndpointsTheDefault = false
        let preset = GateConfiguration.youTubeDataAPIv3
        #expect(described.quota == preset.quota)
        #expect(described.throttle == preset.throttle)
        #expect(described.circuit.defaultPolicy == preset.circuit.defaultPolicy)
        #expect(described.circuit.endpointPolicies == preset.circuit.endpointPolicies)
        #expect(described.retry == preset.retry)
        #expect(described.cache.sensitiveQueryParameters == preset.cache.sensitiveQueryParameters)
        #expect(described.cache.sensitiveHeaders == preset.cache.sensitiveHeaders)
        #expect(described.batching == preset.batching)
        #expect(described.batching.keys.sorted() == ["channels.list", "playlists.list", "videos.list"])

        var single = try APIDescription.named("youtube-v3-single-pool").gateConfiguration()
        single.quota.chargesUnlistedEndpointsTheDefault = false
        #expect(single.quota == QuotaConfiguration.youTubeDataAPIv3SinglePool)
        #expect(single.batching == BatchPolicy.youTubeDataAPIv3)
    }

    @Test("the shipped YouTube routes name requests as the Swift naming does", arguments: [
        ("GET", "/youtube/v3/videos"), ("HEAD", "/youtube/v3/videos"), ("POST", "/youtube/v3/videos"),
        ("PUT", "/youtube/v3/playlists"), ("DELETE", "/youtube/v3/comments"), ("POST", "/youtube/v3/videos/rate"),
        ("GET", "/youtube/v3/videos/getRating"), ("POST", "/youtube/v3/thumbnails/set"), ("GET", "/youtube/v3/captions/abc"),
        ("DELETE", "/youtube/v3/captions/abc"), ("POST", "/upload/youtube/v3/videos"), ("GET", "/upload/youtube/v3/captions/x"),
        ("PATCH", "/youtube/v3/videos"), ("GET", "/v1/other"), ("GET", "/youtube/v3"), ("GET", "/youtube/v3/search;key=abc"),
    ])
    func youTubeRoutesEqualNaming(method: String, path: String) throws {
        let request = HTTPRequest(method: HTTPRequest.Method(method)!, scheme: "https", authority: "www.googleapis.com",
                                  path: path + "?part=snippet")
        let described = try APIDescription.named("youtube-v3").naming
        #expect(described.endpoint(for: request) == EndpointNaming.youTubeDataAPIv3.endpoint(for: request))
    }

    @Test("the shipped files and their compiled copies do not drift")
    func shippedCopiesMatchFiles() throws {
        let directory = Self.root.appending(path: "APIs")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }
        #expect(Set(files.map { String($0.dropLast(5)) }) == Set(APIDescription.shippedTexts.keys),
                "run python3 Scripts/embed-apis.py")
        for file in files {
            let text = try String(contentsOf: directory.appending(path: file), encoding: .utf8)
            #expect(APIDescription.shippedTexts[String(file.dropLast(5))] == text, "\(file) changed: run python3 Scripts/embed-apis.py")
        }
    }

    @Test("a tiered backend's description gives per-endpoint throttles and costs without Swift")
    func tieredBackendShape() throws {
        let yaml = """
            api: Tiered app backend
            upstream: https://api.example.com
            buckets:
              server: {limit: 300, window: day}
            defaults:
              bucket: server
              throttle: {requests: 30, per: 60s}
            routes:
              - {method: GET, path: /api/activities, endpoint: activities}
              - {method: GET, path: "/api/streams/{id}", endpoint: streams}
            endpoints:
              activities: {throttle: {requests: 10, per: 60s}}
              streams: {throttle: {requests: 20, per: 1m}, cost: 2}
            secrets:
              headers: [X-Session]
            """
        let description = try APIDescription(yaml: yaml, file: "backend.yaml")
        #expect(description.endpointName(method: "GET", path: "/api/streams/42") == "streams")
        #expect(description.endpointName(method: "POST", path: "/api/streams/42") == nil)
        let configuration = try description.gateConfiguration()
        #expect(configuration.throttle.limit(for: "activities") == ThrottleLimit(requests: 10, per: .seconds(60)))
        #expect(configuration.throttle.limit(for: "streams") == ThrottleLimit(requests: 20, per: .seconds(60)))
        #expect(configuration.throttle.limit(for: "other") == ThrottleLimit(requests: 30, per: .seconds(60)))
        #expect(configuration.quota.effectiveCost(for: "streams").units == 2)
        #expect(configuration.quota.bucketLimits == ["server": 300])
        #expect(configuration.cache.sensitiveHeaders.contains(HTTPField.Name("X-Session")!))
    }

    @Test("mistakes are refused with the file, line and key that hold them", arguments: [
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {cots: 1}\n", 6, "endpoints.e.cots", "unknown key"),
        ("api: X\nbuckets:\n  b: {limit: -1}\ndefaults: {bucket: b}\n", 3, "buckets.b.limit", "out of range"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: c}\n", 4, "defaults.bucket", "no bucket named 'c'"),
        ("api: X\nbuckets:\n  b: {limit: 10, window: fortnight}\ndefaults: {bucket: b}\n", 3, "buckets.b.window", "not a window"),
        ("api: X\nbuckets:\n  b: {limit: 10, window: {day: Mars/Olympus}}\ndefaults: {bucket: b}\n", 3, "buckets.b.window.day", "not a time zone"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults:\n  bucket: b\n  throttle: {requests: 5, per: soon}\n", 6, "defaults.throttle.per", "not a duration"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nroutes:\n  - {path: \"/a/{id}\", endpoint: \"{name}.get\"}\n", 6, "routes[0].endpoint", "{name} is not a parameter"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nroutes:\n  - {path: a, endpoint: x}\n", 6, "routes[0].path", "starts with /"),
        ("api: X\nbuckets: [1, 2\n", 3, "", "not valid YAML"),
    ])
    func mistakesNamed(yaml: String, line: Int, key: String, message: String) {
        let error = #expect(throws: APIDescriptionError.self) { try APIDescription(yaml: yaml, file: "mine.yaml") }
        #expect(error?.file == "mine.yaml")
        #expect(error?.line == line, "\(String(describing: error))")
        #expect(error?.key == key, "\(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
        #expect(error?.description.hasPrefix("mine.yaml:\(line):") == true)
    }

    @Test("'quota spent' answers with a field reach the gate; none given keeps Google's")
    func quotaExhaustedRules() throws {
        let github = try APIDescription(yaml: """
            api: X
            buckets: {core: {limit: 5000}}
            defaults: {bucket: core}
            quota_exhausted:
              - {status: 429, header: "X-RateLimit-Remaining: 0"}
              - {status: 403, header: "X-RateLimit-Remaining: 0"}
            """)
        let remaining = try #require(HTTPField.Name("X-RateLimit-Remaining"))
        #expect(try github.gateConfiguration().quotaExhaustedAnswers == [
            QuotaExhaustionRule(status: 403, field: (remaining, "0")), QuotaExhaustionRule(status: 429, field: (remaining, "0")),
        ])
        let plain = try APIDescription(yaml: "api: X\nbuckets: {core: {limit: 5}}\ndefaults: {bucket: core}\n")
        #expect(try plain.gateConfiguration().quotaExhaustedAnswers == QuotaExhaustionRule.google)
        let bad = try APIDescription(yaml: """
            api: X
            buckets: {core: {limit: 5}}
            defaults: {bucket: core}
            quota_exhausted: [{status: 403, header: "Bad Name: 0"}]
            """)
        let error = #expect(throws: APIDescriptionError.self) { try bad.gateConfiguration() }
        #expect(error?.key == "quota_exhausted[0].header")
    }

    @Test("windows, announced limits, pacing and actual costs reach the gate's configuration")
    func windowsAndServerWord() throws {
        let description = try APIDescription(yaml: """
            api: LLM
            buckets:
              requests: {limit: 60, window: minute, announced: requests}
              tokens: {limit: 10000, window: minute, announced: {unit: tokens}}
              monthly: {limit: 1000000, window: {month: Europe/Paris}}
              recent: {limit: 50, window: {rolling: 90s}, pacing: {keep: 20%}}
              core: {limit: 5000, window: hour, announced: core}
            defaults: {bucket: requests}
            endpoints:
              chat:
                charges: [{bucket: requests, units: 1}, {bucket: tokens, units: 800}]
                actual_cost: {bucket: tokens, body: usage.total_tokens}
              count: {bucket: core, actual_cost: {header: x-cost}, retry: {max_retries: 0}}
              messages:
                charges: [{bucket: requests, units: 1}, {bucket: tokens, units: 800}]
                actual_cost: {bucket: tokens, body: usage.input_tokens + usage.output_tokens}
            """, file: "llm.yaml")
        let quota = try description.gateConfiguration().quota
        #expect(quota.window(of: "requests") == .minute)
        #expect(quota.window(of: "monthly") == .month(timeZone: "Europe/Paris"))
        #expect(quota.window(of: "recent") == .rolling(seconds: 90))
        #expect(quota.window(of: "core") == .hour)
        #expect(quota.bucketPacing == ["recent": QuotaPacing(reserveFraction: 0.2)])
        #expect(quota.announcedLimits["requests"] == .init(unit: .requests))
        #expect(quota.announcedLimits["tokens"] == .init(unit: .tokens))
        #expect(quota.announcedLimits["core"] == .init(policy: "core"))
        #expect(quota.effectiveCost(for: "chat").actualCost
            == .init(bucket: "tokens", source: .jsonBody(path: ["usage", "total_tokens"])))
        #expect(quota.effectiveCost(for: "count").actualCost == .init(source: .header(.init("x-cost")!)))
        #expect(quota.effectiveCost(for: "messages").actualCost == .init(
            bucket: "tokens", source: .jsonBodySum(paths: [["usage", "input_tokens"], ["usage", "output_tokens"]])))
        let configuration = try description.gateConfiguration()
        #expect(configuration.endpointRetries["count"]?.maximumRetries == 0)
        #expect(configuration.endpointRetries["chat"] == nil)
    }

    @Test("the shipped GitHub, tiered backend and OpenAI descriptions are valid and say what their pages say")
    func shippedNonYouTube() throws {
        let github = try APIDescription.named("github-rest")
        #expect(github.endpointName(method: "GET", path: "/repos/apple/swift") == "repos.get")
        #expect(github.endpointName(method: "GET", path: "/search/issues") == "search.issues")
        let gitHub = try github.gateConfiguration().quota
        #expect(gitHub.bucketLimits["core"] == 5000 && gitHub.window(of: "core") == .hour)
        #expect(gitHub.bucketLimits["search"] == 30 && gitHub.window(of: "search") == .minute)
        #expect(gitHub.effectiveCost(for: "search.issues").bucket == "search")
        #expect(gitHub.effectiveCost(for: "repos.get").bucket == "core")
        #expect(gitHub.effectiveCost(for: "rate_limit").units == 0)
        // Its JSON names api.github.com: the proxy points those URLs at itself.
        #expect(github.rewriteURLs.bodies == ["application/json"])

        let backend = try APIDescription.named("tiered-backend")
        let configuration = try backend.gateConfiguration()
        #expect(configuration.throttle.limit(for: "activities") == ThrottleLimit(requests: 10, per: .seconds(60)))
        #expect(configuration.throttle.limit(for: "streams") == ThrottleLimit(requests: 20, per: .seconds(60)))
        #expect(configuration.throttle.limit(for: "other") == ThrottleLimit(requests: 30, per: .seconds(60)))
        #expect(configuration.quota.window(of: "server") == .hour)
        #expect(configuration.quota.bucketLimits["server"] == 100)
        #expect(backend.rewriteURLs.bodies.isEmpty, "bodies are rewritten only when a description asks")

        let openAI = try APIDescription.named("openai-chat").gateConfiguration().quota
        #expect(openAI.effectiveCost(for: "chat.completions").charges.map(\.bucket) == ["requests", "tokens"])
        #expect(openAI.effectiveCost(for: "chat.completions").actualCost?.bucket == "tokens")
    }

    @Test("mistakes in the new keys are named at their line and key", arguments: [
        ("api: X\nbuckets:\n  b: {limit: 10, pacing: {keep: 150%}}\ndefaults: {bucket: b}\n", 3, "buckets.b.pacing.keep", "0% to 100%"),
        // The ledger's rule for zones: an abbreviation means different zones on different machines.
        ("api: X\nbuckets:\n  b: {limit: 10, window: {day: PST}}\ndefaults: {bucket: b}\n", 3, "buckets.b.window.day", "not a time zone"),
        ("api: X\nbuckets:\n  b: {limit: 10, window: {rolling: 400d}}\ndefaults: {bucket: b}\n", 3, "buckets.b.window.rolling", "366 days"),
        ("api: X\nbuckets:\n  b: {limit: 10, announced: {unit: bytes}}\ndefaults: {bucket: b}\n", 3, "buckets.b.announced.unit", "not a unit"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {actual_cost: {body: usage..total}}\n", 6, "endpoints.e.actual_cost.body", "path of keys"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {actual_cost: {}}\n", 6, "endpoints.e.actual_cost", "body"),
        ("api: X\nbuckets:\n  b: {limit: 10}\n  c: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {bucket: b, actual_cost: {bucket: c, body: n}}\n", 7, "endpoints.e.actual_cost.bucket", "not charged in bucket 'c'"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nrewrite_urls:\n  bodies: [application/json, json]\n", 6, "rewrite_urls.bodies", "not a media type"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nrewrite_urls: {headers: [Link]}\n", 5, "rewrite_urls.headers", "unknown key"),
        // Callers wait behind one another for a batch's wait: a day would hold them all.
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {batch: {parameter: id, wait: 1d}}\n", 6, "endpoints.e.batch.wait", "at most 1s"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {batch: {parameter: id, max: 100000}}\n", 6, "endpoints.e.batch.max", "1"),
    ])
    func newKeysMistakes(yaml: String, line: Int, key: String, message: String) {
        let error = #expect(throws: APIDescriptionError.self) { try APIDescription(yaml: yaml, file: "mine.yaml") }
        #expect(error?.line == line, "\(String(describing: error))")
        #expect(error?.key == key, "\(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test("not_modified_cost and fresh_for reach the gate; the deprecated refund_not_modified still reads, with a line saying what to write")
    func unitsSavedKeys() throws {
        let description = try APIDescription(yaml: """
            api: X
            buckets:
              b: {limit: 100}
            defaults: {bucket: b, fresh_for: {min: 1m, max: 1h, follow_budget: true}}
            endpoints:
              one: {cost: 5, not_modified_cost: 1, fresh_for: 5m}
              free: {not_modified_cost: 0}
              full: {not_modified_cost: full}
              old: {refund_not_modified: true}
              stale: {fresh_for: {min: 5m, stale_if_error: 1h, stale_while_revalidate: 1m}}
            """, file: "mine.yaml")
        let configuration = try description.gateConfiguration()
        #expect(configuration.quota.notModifiedCostByDefault == .full, "an API nobody described: the full price")
        #expect(configuration.quota.cost(for: "one")?.notModifiedCost == .units(1))
        #expect(configuration.quota.cost(for: "free")?.notModifiedCost == .free)
        #expect(configuration.quota.cost(for: "full")?.notModifiedCost == .full)
        #expect(configuration.quota.cost(for: "old")?.notModifiedCost == .free)
        #expect(configuration.freshFor == ChosenFreshness(minimum: .seconds(60), maximum: .seconds(3600), followsBudget: true))
        #expect(configuration.endpointFreshFor == [
            "one": ChosenFreshness(.seconds(300)),
            "stale": ChosenFreshness(.seconds(300), staleIfError: .seconds(3600), staleWhileRevalidate: .seconds(60)),
        ])
        #expect(configuration.endpointFreshFor["stale"]?.description == "{min: 300s, max: 300s, stale_if_error: 3600s, stale_while_revalidate: 60s}")
        #expect(description.deprecations.count == 1)
        #expect(description.deprecations.first?.contains("mine.yaml:9: endpoints.old.refund_not_modified is deprecated") == true,
                "\(description.deprecations)")
        let youTube = try APIDescription.named("youtube-v3").gateConfiguration()
        #expect(youTube.quota.notModifiedCostByDefault == .units(1))
        #expect(youTube.freshFor == nil, "nothing chosen: RFC 9111 alone")
        #expect(try APIDescription.named("github-rest").gateConfiguration().quota.notModifiedCostByDefault == .free)
        #expect(APIDescription.shippedTexts.values.allSatisfy { !$0.contains("refund_not_modified") })
    }

    @Test("mistakes in not_modified_cost and fresh_for are named at their line and key", arguments: [
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b, not_modified_cost: some}\n", 4, "defaults.not_modified_cost", "or full"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b, not_modified_cost: -1}\n", 4, "defaults.not_modified_cost", "out of range"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b, not_modified_cost: 0, refund_not_modified: true}\n", 4, "defaults.refund_not_modified", "not_modified_cost only"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {fresh_for: soon}\n", 6, "endpoints.e.fresh_for", "not a duration"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {fresh_for: {min: 1h, max: 1m}}\n", 6, "endpoints.e.fresh_for.max", "at least min"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {fresh_for: {min: 1m, follow_budget: true}}\n", 6, "endpoints.e.fresh_for.max", "above min"),
        ("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {fresh_for: {max: 1m}}\n", 6, "endpoints.e.fresh_for.min", "missing"),
    ])
    func unitsSavedMistakes(yaml: String, line: Int, key: String, message: String) {
        let error = #expect(throws: APIDescriptionError.self) { try APIDescription(yaml: yaml, file: "mine.yaml") }
        #expect(error?.line == line, "\(String(describing: error))")
        #expect(error?.key == key, "\(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test("rewrite_urls lists the media types whose bodies the proxy rewrites, lowercased; none without it")
    func rewriteURLs() throws {
        let base = "api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\n"
        let listed = try APIDescription(yaml: base + "rewrite_urls: {bodies: [Application/JSON, application/hal+json]}\n")
        #expect(listed.rewriteURLs.bodies == ["application/json", "application/hal+json"])
        #expect(try APIDescription(yaml: base).rewriteURLs.bodies.isEmpty)
    }

    @Test("an unknown name is neither a file nor a shipped description")
    func unknownName() {
        let error = #expect(throws: APIDescriptionError.self) { try APIDescription.named("nope-api") }
        #expect(error?.message.contains("youtube-v3") == true, "the shipped names are listed")
    }
}
