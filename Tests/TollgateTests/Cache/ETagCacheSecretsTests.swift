import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
import Tollgate

@Suite("ETag cache: secrets never reach the file")
struct ETagCacheSecretsTests {
    /// Every byte SQLite wrote: the database file and its write-ahead log, read without a checkpoint.
    private func fileBytes(_ fixture: CacheFixture) -> Data {
        (FileManager.default.contents(atPath: fixture.path) ?? Data())
            + (FileManager.default.contents(atPath: fixture.path + "-wal") ?? Data())
    }

    @Test("two API keys in the key query parameter give two entries, and neither key's bytes are in the file or its WAL")
    func apiKeysPartitionAndNeverReachTheFile() async throws {
        let fixture = try CacheFixture()
        let keyA = "AIzaSyA-first-secret-key-0123456789abc"
        let keyB = "AIzaSyB-second-secret-key-9876543210xyz"
        for (key, body) in [(keyA, "for A"), (keyB, "for B")] {
            let target = request("https://www.googleapis.com/youtube/v3/videos?part=snippet&id=abc&key=\(key)")
            // The server even echoes the key in a header: it is redacted there too.
            try await fixture.cache.storeResponse(
                response(200, [("ETag", "\"same-etag\""), ("Content-Location", "/youtube/v3/videos?key=\(key)"),
                               ("Set-Cookie", "session=\(key)")]),
                body: Data(body.utf8), for: target, endpoint: "videos.list"
            )
        }
        #expect(try fixture.count("cache_entries") == 2)
        let lookupA = try await fixture.cache.lookup(
            request("https://www.googleapis.com/youtube/v3/videos?key=\(keyA)&id=abc&part=snippet"), endpoint: "videos.list"
        )
        #expect(lookupA.cachedResponse?.body == Data("for A".utf8), "parameter order does not matter")
        let lookupB = try await fixture.cache.lookup(
            request("https://www.googleapis.com/youtube/v3/videos?part=snippet&id=abc&key=\(keyB)"), endpoint: "videos.list"
        )
        #expect(lookupB.cachedResponse?.body == Data("for B".utf8))
        #expect(lookupB.cachedResponse?.headerFields[.setCookie] == nil)
        let withoutKey = try await fixture.cache.lookup(
            request("https://www.googleapis.com/youtube/v3/videos?part=snippet&id=abc"), endpoint: "videos.list"
        )
        #expect(withoutKey.isMiss)

        let urls = try fixture.query("SELECT url, headers FROM cache_entries")
        #expect(urls.allSatisfy { $0[0].string == "https://www.googleapis.com/youtube/v3/videos?id=abc&key=REDACTED&part=snippet" })
        #expect(urls.allSatisfy { $0[1].string?.contains("set-cookie") == false && $0[1].string?.contains("Set-Cookie") == false })

        let bytes = fileBytes(fixture)
        #expect(bytes.count > 0)
        #expect(FileManager.default.fileExists(atPath: fixture.path + "-wal"))
        #expect(!bytes.containsBytes(of: keyA))
        #expect(!bytes.containsBytes(of: keyB))
        #expect(!bytes.containsBytes(of: "first-secret"))
        #expect(bytes.containsBytes(of: "key=REDACTED"), "the check reads the bytes SQLite wrote")
    }

    @Test("bearer tokens in Authorization partition the cache and never reach the file")
    func bearerTokens() async throws {
        let fixture = try CacheFixture()
        let tokenA = "ya29.a0AfH6SM-token-of-user-a-abcdefghijklmnop"
        let tokenB = "ya29.a0AfH6SM-token-of-user-b-qrstuvwxyz012345"
        let target = "https://www.googleapis.com/youtube/v3/subscriptions?mine=true&part=snippet"
        for (token, body) in [(tokenA, "subs of A"), (tokenB, "subs of B")] {
            try await fixture.cache.storeResponse(
                response(200, [("ETag", "\"e\""), ("Vary", "Authorization"), ("WWW-Authenticate", "Bearer realm=\"\(token)\"")]),
                body: Data(body.utf8), for: request(target, headers: [("Authorization", "Bearer \(token)")]), endpoint: "subscriptions.list"
            )
        }
        #expect(try fixture.count("cache_entries") == 2)
        let a = try await fixture.cache.lookup(request(target, headers: [("Authorization", "Bearer \(tokenA)")]), endpoint: "s")
        let b = try await fixture.cache.lookup(request(target, headers: [("Authorization", "Bearer \(tokenB)")]), endpoint: "s")
        #expect(a.cachedResponse?.body == Data("subs of A".utf8))
        #expect(b.cachedResponse?.body == Data("subs of B".utf8))
        #expect(a.conditionalRequest?.headerFields[.authorization] == "Bearer \(tokenA)", "the request to send keeps its credentials")
        #expect(try await fixture.cache.lookup(request(target), endpoint: "s").isMiss)

        let bytes = fileBytes(fixture)
        #expect(!bytes.containsBytes(of: tokenA))
        #expect(!bytes.containsBytes(of: tokenB))
        #expect(!bytes.containsBytes(of: "token-of-user"))
    }

    @Test("other sensitive parameters and headers are redacted too, and the lists are configurable")
    func configurableSecrets() async throws {
        var configuration = CacheConfiguration()
        configuration.sensitiveQueryParameters.insert("session")
        configuration.sensitiveHeaders.insert(HTTPField.Name("X-Tenant-Secret")!)
        let fixture = try CacheFixture(configuration: configuration)
        let secrets = ["access-token-000111222333", "signature-444555666777", "session-888999000111",
                       "x-api-key-value-121212121", "cookie-value-343434343434", "tenant-secret-5656565656", "userpass-78787878"]
        let target = request(
            "https://\(secrets[6])@API.Example.com:443/v1/items?ACCESS_TOKEN=\(secrets[0])&sig=\(secrets[1])&session=\(secrets[2])&page=2",
            headers: [("X-Api-Key", secrets[3]), ("Cookie", "sid=\(secrets[4])"), ("X-Tenant-Secret", secrets[5])]
        )
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"e\"")]), body: Data("ok".utf8), for: target, endpoint: "e")
        let url = try fixture.query("SELECT url FROM cache_entries").first?[0].string
        #expect(url == "https://api.example.com/v1/items?ACCESS_TOKEN=REDACTED&page=2&session=REDACTED&sig=REDACTED")
        let bytes = fileBytes(fixture)
        for secret in secrets {
            #expect(!bytes.containsBytes(of: secret), "\(secret)")
        }
        #expect(try await fixture.cache.lookup(target, endpoint: "e").cachedResponse?.body == Data("ok".utf8))
    }
}
