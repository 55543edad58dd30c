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

@Suite("tollgate get fits a shell")
struct GetShellTests {
    @Test("quiet by default: the body on stdout and one summary line on stderr; --verbose adds the library's logs")
    func quietByDefault() throws {
        let origin = try ScriptedHTTPServer { _ in .init(headers: [("ETag", "\"e\"")], body: "the body") }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let url = "\(origin.baseURL)/v1/unknown-endpoint"
        let quiet = try CommandRunner.tollgate("get", url, "--db", directory.path("q.sqlite"))
        #expect(quiet.status == 0)
        #expect(quiet.stdout == "the body")
        let lines = quiet.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(quiet.stderr)")
        #expect(lines.first?.hasPrefix("tollgate: GET /v1/unknown-endpoint · status 200") == true)

        let verbose = try CommandRunner.tollgate("get", url, "--db", directory.path("v.sqlite"), "--verbose")
        #expect(verbose.stderr.contains("not in the quota cost table"), "\(verbose.stderr)")
        let debug = try CommandRunner.tollgate("get", url, "--db", directory.path("d.sqlite"), "--log-level", "debug")
        #expect(debug.stderr.contains("applied migration"), "a library's routine events are debug lines")
        let again = try CommandRunner.tollgate("get", url, "--db", directory.path("v.sqlite"), "--verbose")
        #expect(!again.stderr.contains("not in the quota cost table"), "said once per file, not on every run")
        let viaEnvironment = try CommandRunner.tollgate("get", url, "--db", directory.path("e.sqlite"),
                                                        environment: ["TOLLGATE_LOG_LEVEL": "warning"])
        #expect(viaEnvironment.stderr.contains("not in the quota cost table"))
        #expect(!viaEnvironment.stderr.contains("applied migration"), "warnings only")
        let badLevel = try CommandRunner.tollgate("get", url, "--log-level", "chatty")
        #expect(badLevel.status == 64)
    }

    @Test("--fail exits 22 on a final status of 400 or more and writes no body; -o writes the body to a file; -i writes the head first")
    func curlOptions() throws {
        let origin = try ScriptedHTTPServer { request in
            request.target == "/missing"
                ? .init(status: 404, headers: [("Content-Type", "text/plain")], body: "not here")
                : .init(headers: [("ETag", "\"e\""), ("X-Custom", "yes")], body: "the body")
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let db = directory.path("f.sqlite")

        let missing = try CommandRunner.tollgate("get", "\(origin.baseURL)/missing", "--db", db)
        #expect(missing.status == 0)
        #expect(missing.stdout == "not here")
        let failing = try CommandRunner.tollgate("get", "-f", "\(origin.baseURL)/missing", "--db", db)
        #expect(failing.status == 22)
        #expect(failing.stdout.isEmpty)
        #expect(failing.stderr.contains("status 404"))

        let file = directory.path("out.txt")
        let saved = try CommandRunner.tollgate("get", "\(origin.baseURL)/ok", "--db", db, "-o", file)
        #expect(saved.status == 0)
        #expect(saved.stdout.isEmpty)
        #expect(FileManager.default.contents(atPath: file) == Data("the body".utf8))

        let included = try CommandRunner.tollgate("get", "-i", "\(origin.baseURL)/ok", "--db", db)
        #expect(included.stdout.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(included.stdout.contains("X-Custom: yes\r\n"))
        #expect(included.stdout.hasSuffix("\r\n\r\nthe body"))
    }

    @Test("-X and -d send another method through the gate, charged and never cached")
    func methodAndData() throws {
        let origin = try ScriptedHTTPServer { request in
            .init(headers: [("ETag", "\"e\""), ("Cache-Control", "max-age=600")],
                  body: "\(request.method) \(String(decoding: request.body, as: UTF8.self)) \(request.header("Content-Type") ?? "")")
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let db = directory.path("x.sqlite")
        let posted = try CommandRunner.tollgate("get", "\(origin.baseURL)/v1/items", "--db", db, "-d", "a=1&b=2")
        #expect(posted.stdout == "POST a=1&b=2 application/x-www-form-urlencoded", "\(posted.stderr)")
        let put = try CommandRunner.tollgate("get", "-X", "PUT", "\(origin.baseURL)/v1/items", "--db", db,
                                             "-d", "{}", "-H", "Content-Type: application/json")
        #expect(put.stdout == "PUT {} application/json")
        let getWithBody = try CommandRunner.tollgate("get", "-X", "GET", "\(origin.baseURL)/v1/items", "--db", db, "-d", "q")
        #expect(getWithBody.status == 64, "a GET body is refused: \(getWithBody.stderr)")
        let again = try CommandRunner.tollgate("get", "-X", "PUT", "\(origin.baseURL)/v1/items", "--db", db, "-d", "{}")
        #expect(again.stderr.contains("source network"), "a PUT is never answered from the cache")
        #expect(origin.requests.count == 3)
        let entries = try CommandRunner.sqlite3(db, "SELECT count(*) FROM cache_entries")
        #expect(entries.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test("a must-revalidate answer is not served stale when the server is down, unless --stale-despite-directives")
    func staleDespiteDirectives() throws {
        let origin = try ScriptedHTTPServer { _ in
            .init(headers: [("ETag", "\"e\""), ("Cache-Control", "private, max-age=0, must-revalidate, no-transform")],
                  body: "stored answer")
        }
        let directory = try TemporaryDirectory()
        let db = directory.path("stale.sqlite")
        let url = "\(origin.baseURL)/youtube/v3/videos?id=1"
        let first = try CommandRunner.tollgate("get", url, "--db", db)
        #expect(first.stdout == "stored answer")
        origin.stop()

        let strict = try CommandRunner.tollgate("get", url, "--db", db)
        #expect(strict.status == 6, "RFC 9111 §4.2.4: \(strict.stderr)")
        #expect(strict.stdout.isEmpty)
        let lenient = try CommandRunner.tollgate("get", url, "--db", db, "--stale-despite-directives")
        #expect(lenient.status == 0, "\(lenient.stderr)")
        #expect(lenient.stdout == "stored answer")
        #expect(lenient.stderr.contains("source stale (upstreamFailure)"))
    }
}
