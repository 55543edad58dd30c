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

@Suite("Cache key: every credential partitions, every secret is redacted")
struct CredentialPartitionTests {
    private func fileBytes(_ fixture: CacheFixture) -> Data {
        (FileManager.default.contents(atPath: fixture.path) ?? Data())
            + (FileManager.default.contents(atPath: fixture.path + "-wal") ?? Data())
    }

    @Test("X-Auth-Token alice then bob on one URL: bob never gets alice's answer", arguments: [
        "X-Auth-Token", "X-Tenant-Token", "X-Customer-Key", "X-My-Auth", "X-Client-Secret", "Cookie", "X-Session-Id",
    ])
    func identityHeadersPartition(header: String) async throws {
        let fixture = try CacheFixture()
        let target = "https://api.example.com/v1/me"
        let alice = request(target, headers: [(header, "alice-credential-0123456789")])
        let bob = request(target, headers: [(header, "bob-credential-9876543210")])
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"me\""), ("Cache-Control", "max-age=600")]),
            body: Data("alice's account".utf8), for: alice, endpoint: "me"
        )
        #expect(try await fixture.cache.lookup(alice, endpoint: "me").cachedResponse?.body == Data("alice's account".utf8))
        #expect(try await fixture.cache.lookup(bob, endpoint: "me").isMiss)
        #expect(try await fixture.cache.lookup(request(target), endpoint: "me").isMiss)
        #expect(!fileBytes(fixture).containsBytes(of: "alice-credential"))
    }

    @Test("a response header whose name matches a secret pattern is never stored")
    func responseHeadersByPattern() async throws {
        let fixture = try CacheFixture()
        let target = request("https://api.example.com/v1/public")
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"p\""), ("X-Session-Token", "minted-session-0123456789"), ("X-Refresh-Token", "r-0123456789"),
                           ("X-Plain", "kept")]),
            body: Data("public".utf8), for: target, endpoint: "public"
        )
        let stored = try #require(try await fixture.cache.lookup(target, endpoint: "public").cachedResponse)
        #expect(stored.headerFields[HTTPField.Name("X-Plain")!] == "kept")
        #expect(stored.headerFields[HTTPField.Name("X-Session-Token")!] == nil)
        #expect(stored.headerFields[HTTPField.Name("X-Refresh-Token")!] == nil)
        #expect(!fileBytes(fixture).containsBytes(of: "minted-session"))
    }

    @Test("a configured header name or pattern partitions too")
    func configuredHeaderPartitions() async throws {
        var configuration = CacheConfiguration()
        configuration.sensitiveHeaderPatterns.append("x-customer*")
        let fixture = try CacheFixture(configuration: configuration)
        let target = "https://api.example.com/v1/me"
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"me\"")]), body: Data("one".utf8),
            for: request(target, headers: [("X-Customer", "c1")]), endpoint: "me"
        )
        #expect(try await fixture.cache.lookup(request(target, headers: [("X-Customer", "c2")]), endpoint: "me").isMiss)
        #expect(try await fixture.cache.lookup(request(target, headers: [("X-Customer", "c1")]), endpoint: "me").isMiss == false)
    }

    @Test("client_secret, password, refresh_token, id_token, secret, code, camelCase and path parameters never reach the file")
    func generousQueryRedaction() async throws {
        let fixture = try CacheFixture()
        let secrets = [
            "client_secret": "cs-value-0123456789", "password": "pw-value-0123456789",
            "refresh_token": "rt-value-0123456789", "id_token": "it-value-0123456789",
            "secret": "s-value-0123456789", "code": "code-value-0123456789", "Access_Token": "at-value-0123456789",
            "accessToken": "camel-value-0123456789", "x-amz-signature": "amz-value-0123456789",
            "my_api_key": "mak-value-0123456789", "SESSION": "sess-value-0123456789",
        ]
        let query = secrets.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        let target = "https://api.example.com/v1/items;key=path-value-0123456789;v=2/list?pageToken=CAUQAA&\(query)"
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"e\"")]), body: Data("items".utf8), for: request(target), endpoint: "items"
        )
        let stored = try #require(try fixture.query("SELECT url FROM cache_entries").first?[0].string)
        #expect(stored.contains("pageToken=CAUQAA"), "a pagination cursor stays readable: \(stored)")
        #expect(stored.contains(";key=REDACTED;v=2/list"), "\(stored)")
        let bytes = fileBytes(fixture)
        for value in secrets.values + ["path-value-0123456789"] {
            #expect(!bytes.containsBytes(of: value), "\(value) reached the file")
        }
        // The same request finds its entry; another secret value does not.
        #expect(try await fixture.cache.lookup(request(target), endpoint: "items").isMiss == false)
        let other = target.replacingOccurrences(of: "pw-value-0123456789", with: "pw-other-0123456789")
        #expect(try await fixture.cache.lookup(request(other), endpoint: "items").isMiss)
    }

    @Test("name patterns match case-insensitively, anchored, with * anywhere")
    func patterns() {
        #expect(SecretNamePattern("*-token").matches("X-Auth-TOKEN"))
        #expect(!SecretNamePattern("*-token").matches("pageToken"))
        #expect(SecretNamePattern("*auth*").matches("Authorization"))
        #expect(SecretNamePattern("*auth*").matches("x-my-auth"))
        #expect(SecretNamePattern("x-*-key").matches("X-Goog-Api-Key"))
        #expect(!SecretNamePattern("x-*-key").matches("X-Key"))
        #expect(SecretNamePattern("key").matches("KEY"))
        #expect(!SecretNamePattern("key").matches("keys"))
        #expect(SecretNamePattern("*").matches(""))
        #expect(SecretNamePattern("a*b*a").matches("aba"))
        #expect(!SecretNamePattern("a*b*a").matches("ab"))
    }
}
