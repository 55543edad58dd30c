import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

@Suite("Secrets: an API key and a bearer token never reach the file, its WAL or the logs")
struct SecretsTests {
    static let apiKey = "AIzaSyD-reliability-key-4f8e2b9c1a7d6e3f"
    static let token = "ya29.reliability-bearer-token-9b7c5e3a1d"

    func request(_ fixture: GateFixture, _ resource: String, _ id: String) -> HTTPRequest {
        var request = HTTPRequest(url: fixture.api.url(resource, ["id": id, "part": "snippet", "key": Self.apiKey]))
        request.headerFields[.authorization] = "Bearer \(Self.token)"
        return request
    }

    @Test("after a workload of fetches, revalidations, rate limits, an outage and quota exhaustion")
    func neverStoredNorLogged() async throws {
        let fixture = try await GateFixture(configure: { configuration in
            configuration.quota.bucketLimits[QuotaConfiguration.youTubeBucket] = 40
        })
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let gate = fixture.gate
            for id in ["v1", "v2", "v3"] {
                _ = try await gate.send(request(fixture, "videos", id), endpoint: "videos.list")
                _ = try await gate.send(request(fixture, "videos", id), endpoint: "videos.list")  // 304
            }
            fixture.api.updateBehaviour { $0.rateLimitStorm = .init(count: 2, retryAfter: "1") }
            _ = try? await gate.send(request(fixture, "channels", "c1"), endpoint: "channels.list")
            fixture.api.updateBehaviour { $0.outage = .init(count: 6) }
            for id in ["p1", "p2"] { _ = try? await gate.send(request(fixture, "playlists", id), endpoint: "playlists.list") }
            fixture.api.updateBehaviour { $0.outage = nil }
            for attempt in 0..<3 {
                _ = try? await gate.send(request(fixture, "search", "s\(attempt)"), endpoint: "search.list")  // 100 units: refused
            }
            try await gate.flush()
            #expect(fixture.api.receivedRequests.count > 6, "the workload reached the server")
            #expect(fixture.api.receivedRequests.allSatisfy { $0.query.contains(Self.apiKey) }, "the key was sent")

            // The file and its write-ahead log, while the store is open (the WAL holds the recent writes).
            let walPath = fixture.path + "-wal"
            #expect(FileManager.default.fileExists(atPath: walPath))
            for path in [fixture.path, walPath] {
                let bytes = try #require(fileBytes(path))
                for secret in [Self.apiKey, Self.token, "Bearer \(Self.token)"] {
                    #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) found in \(path)")
                }
                // Also percent-encoded, in case a URL was stored as sent.
                let encoded = Self.apiKey.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? Self.apiKey
                #expect(bytes.range(of: Data(encoded.utf8)) == nil)
            }

            // Every log line at every level, with its metadata.
            #expect(!fixture.logs.entries.isEmpty)
            #expect(fixture.logs.entries.contains { $0.level == .trace || $0.level == .debug })
            for entry in fixture.logs.entries {
                let line = "\(entry.level) \(entry.message) \(entry.metadata) \(String(describing: entry.error))"
                #expect(!line.contains(Self.apiKey) && !line.contains(Self.token), "secret in log: \(line)")
            }
        }
    }
}
