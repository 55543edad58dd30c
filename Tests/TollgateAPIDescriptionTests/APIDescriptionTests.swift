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
        let described = try APIDescription.named("youtube-v3").gateConfiguration()
        let preset = GateConfiguration.youTubeDataAPIv3
        #expect(described.quota == preset.quota)
        #expect(described.throttle == preset.throttle)
        #expect(described.circuit.defaultPolicy == preset.circuit.defaultPolicy)
        #expect(described.circuit.endpointPolicies == preset.circuit.endpointPolicies)
        #expect(described.retry == preset.retry)
        #expect(described.cache.sensitiveQueryParameters == preset.cache.sensitiveQueryParameters)
        #expect(described.cache.sensitiveHeaders == preset.cache.sensitiveHeaders)

        let single = try APIDescription.named("youtube-v3-single-pool").gateConfiguration()
        #expect(single.quota == QuotaConfiguration.youTubeDataAPIv3SinglePool)
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

    @Test("a seeds' backend description gives per-endpoint throttles and costs without Swift")
    func seedsBackendShape() throws {
        let yaml = """
            api: Seeds backend
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

    @Test("a window or a quota answer this release's gate cannot follow is refused, not ignored")
    func unsupportedRefused() throws {
        let hourly = try APIDescription(yaml: "api: X\nbuckets:\n  core: {limit: 5000, window: hour}\ndefaults: {bucket: core}\n")
        let error = #expect(throws: APIDescriptionError.self) { try hourly.gateConfiguration() }
        #expect(error?.key == "buckets.core.window")
        let github = try APIDescription(yaml: """
            api: X
            buckets: {core: {limit: 5000}}
            defaults: {bucket: core}
            quota_exhausted:
              - {status: 403, header: "X-RateLimit-Remaining: 0"}
            """)
        #expect(throws: APIDescriptionError.self) { try github.gateConfiguration() }
    }

    @Test("an unknown name is neither a file nor a shipped description")
    func unknownName() {
        let error = #expect(throws: APIDescriptionError.self) { try APIDescription.named("nope-api") }
        #expect(error?.message.contains("youtube-v3") == true, "the shipped names are listed")
    }
}
