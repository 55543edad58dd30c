import Foundation
import Testing
import TollgateTestSupport

@Suite("tollgate get: redirects and secrets")
struct GetHardeningTests {
    @Test("a redirect to another host is printed as it is; with -L it is followed without the credentials")
    func crossOriginRedirect() throws {
        let other = try ScriptedHTTPServer(host: "127.0.0.2") { _ in .init(body: "other host") }
        defer { other.stop() }
        let origin = try ScriptedHTTPServer(host: "127.0.0.1") { _ in
            .init(status: 302, headers: [("Location", "\(other.baseURL)/next?key=AIzaSy-secret-query")], body: "moved")
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let url = "\(origin.baseURL)/youtube/v3/videos?id=1&key=AIzaSy-secret-query"

        let plain = try CommandRunner.tollgate("get", url, "--db", directory.path("get.sqlite"),
                                               "-H", "Authorization: Bearer secret-bearer-value")
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout == "moved")
        #expect(plain.stderr.contains("status 302"))
        #expect(other.requests.isEmpty)

        let followed = try CommandRunner.tollgate("get", "-L", url, "--db", directory.path("get.sqlite"),
                                                  "-H", "Authorization: Bearer secret-bearer-value",
                                                  "-H", "X-Goog-Api-Key: AIzaSy-secret-header")
        #expect(followed.status == 0, "\(followed.stderr)")
        #expect(followed.stdout == "other host")
        #expect(followed.stderr.contains("followed a redirect to \(other.baseURL)/next"))
        let received = try #require(other.requests.first)
        #expect(received.target == "/next")
        #expect(received.header("Authorization") == nil)
        #expect(received.header("X-Goog-Api-Key") == nil)
    }

    @Test("--secret-param and --secret-header extend what is redacted and partitioned")
    func secretOptions() throws {
        let origin = try ScriptedHTTPServer { request in
            .init(headers: [("ETag", "\"e\""), ("Cache-Control", "max-age=600")],
                  body: "for \(request.header("X-Customer") ?? "nobody")")
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.path("secrets.sqlite")
        let url = "\(origin.baseURL)/v1/items?tenant_pin=4242-secret-pin"

        let first = try CommandRunner.tollgate("get", url, "--db", path, "--secret-param", "tenant_pin",
                                               "--secret-header", "X-Cust*", "-H", "X-Customer: alice")
        #expect(first.stdout == "for alice", "\(first.stderr)")
        let second = try CommandRunner.tollgate("get", url, "--db", path, "--secret-param", "tenant_pin",
                                                "--secret-header", "X-Cust*", "-H", "X-Customer: bob")
        #expect(second.stdout == "for bob", "bob is a partition of his own: \(second.stderr)")
        let urls = try CommandRunner.sqlite3(path, "SELECT url FROM cache_entries")
        #expect(urls.stdout.contains("tenant_pin=REDACTED"), "\(urls.stdout)")
        #expect(!urls.stdout.contains("4242-secret-pin"))

        let bad = try CommandRunner.tollgate("get", url, "--db", path, "--secret-header", "Bad Name")
        #expect(bad.status == 64)
    }
}
