import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Testing
@testable import Tollgate
import TollgateTestSupport

@Suite("Secrets: an endpoint name never carries one, however it is derived")
struct EndpointNameSecretsTests {
    static let pathKey = "AIzaSyD-path-parameter-key-77c1e0a9b3"
    static let apiKey = "AIzaSyD-matrix-api-key-3d5f7a9c1e"
    static let handKey = "AIzaSyD-hand-named-key-0b2d4f6a8c"

    @Test("a path parameter's key stays out of the ledger, circuits, throttle, cache rows, WAL and logs")
    func pathParametersNeverReachTheFile() async throws {
        // An origin whose answers never echo the request: any secret in the file came from Tollgate.
        let origin = try ScriptedHTTPServer { _ in
            .init(status: 200, headers: [(name: "ETag", value: "\"v1\""), (name: "Content-Type", value: "application/json")],
                  body: "{\"items\": []}")
        }
        defer { origin.stop() }
        let fixture = try await GateFixture()
        await fixture.stop()
        let base = origin.baseURL
        // The preset's naming, a caller's METHOD /path naming, and a name passed by hand.
        let youTube = HTTPRequest(url: URL(string: "\(base)/youtube/v3/videos;key=\(Self.pathKey)?id=v1&part=snippet")!)
        let named = EndpointNaming.youTubeDataAPIv3.endpoint(for: youTube)
        #expect(named == "videos.list")
        _ = try await fixture.gate.send(youTube, endpoint: named)

        let items = HTTPRequest(url: URL(string: "\(base)/v1/items;api_key=\(Self.apiKey);v=2/detail")!)
        let itemsName = EndpointNaming.methodAndPath.endpoint(for: items)
        #expect(itemsName == "GET /v1/items/detail")
        _ = try await fixture.gate.send(items, endpoint: itemsName)
        let other = HTTPRequest(url: URL(string: "\(base)/v1/other")!)
        _ = try await fixture.gate.send(other, endpoint: "GET /v1/other;key=\(Self.handKey)")
        try await fixture.gate.flush()
        #expect(origin.requests.count == 3, "every request reached the server")
        #expect(origin.requests.contains { $0.target.contains(Self.pathKey) }, "the key was sent")

        let endpoints = try await fixture.store.read { db in
            try db.fetchAll(sql: "SELECT DISTINCT endpoint FROM quota_events").compactMap { $0[0].string }
        }
        #expect(endpoints.contains("GET /v1/other;key=REDACTED"), "the hand-made name, redacted: \(endpoints)")
        for path in [fixture.path, fixture.path + "-wal"] {
            let bytes = try #require(fileBytes(path))
            for secret in [Self.pathKey, Self.apiKey, Self.handKey] {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) found in \(path)")
            }
        }
        for entry in fixture.logs.entries {
            let line = "\(entry.level) \(entry.message) \(entry.metadata)"
            for secret in [Self.pathKey, Self.apiKey, Self.handKey] {
                #expect(!line.contains(secret), "secret in log: \(line)")
            }
        }
    }

    @Test("redaction keeps every name without a secret as it was", arguments: [
        ("videos.list", "videos.list"),
        ("GET /v1/items;key=abc", "GET /v1/items;key=REDACTED"),
        ("GET /v1/items;v=2;api_key=abc/x", "GET /v1/items;v=2;api_key=REDACTED/x"),
        ("GET /v1/search?q=cats&access_token=abc", "GET /v1/search?q=cats&access_token=REDACTED"),
        ("GET /v1/items;Client%5FSecret=abc", "GET /v1/items;Client%5FSecret=REDACTED"),
        ("GET /v1/a=b", "GET /v1/a=b"),
    ])
    func redactsOnlySecrets(name: String, expected: String) {
        let rules = CacheKey.SecretRules(CacheConfiguration())
        #expect(EndpointNaming.redactingSecrets(in: name, rules: rules) == expected)
    }
}
