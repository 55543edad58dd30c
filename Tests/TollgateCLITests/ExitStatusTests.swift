import Foundation
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateSQLite
import TollgateTestSupport

/// Every `tollgate` error goes one way: one line on stderr starting `tollgate: `, and the exit
/// status README's command-line section lists. 130 (interrupted) is
/// `FailureSummaryTests.interruptedDuringBackoff`.
@Suite("tollgate's exit statuses and its one error format")
struct ExitStatusTests {
    /// The error line, checked for the one format: no argument-parser `Error:`, no `error:`.
    static func errorLine(_ result: CommandResult, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.hasPrefix("Error:") || $0.hasPrefix("error:") }, "\(result.stderr)",
                sourceLocation: sourceLocation)
        return lines.first { $0.hasPrefix("tollgate: ") }
    }

    @Test("0: answered")
    func answered() async throws {
        let api = try await FakeYouTubeAPI.start()
        defer { Task { await api.stop() } }
        let directory = try TemporaryDirectory()
        let result = try CommandRunner.tollgate("get", api.url("videos", ["id": "v1"]).absoluteString,
                                                "--db", directory.path("ok.sqlite"))
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test("22: get --fail with a final status of 400 or more; without --fail the same answer exits 0")
    func httpError() throws {
        let origin = try ScriptedHTTPServer { _ in .init(status: 404, body: "no such video") }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let url = "\(origin.baseURL)/youtube/v3/videos?id=missing"
        let failing = try CommandRunner.tollgate("get", "--fail", url, "--db", directory.path("f.sqlite"))
        #expect(failing.status == 22, "\(failing.stderr)")
        #expect(failing.stdout.isEmpty)
        let plain = try CommandRunner.tollgate("get", url, "--db", directory.path("f.sqlite"))
        #expect(plain.status == 0, "\(plain.stderr)")
    }

    @Test("3: throttled, with nothing stored and a wait past the maximum")
    func throttled() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("t.sqlite")
        let store = try SQLiteStore(path: path)
        let throttle = try RequestThrottler(storage: store, configuration: GateConfiguration.youTubeDataAPIv3.throttle,
                                            clock: SystemClock())
        var allowed = true
        while allowed { allowed = try await throttle.shouldAllowRequest(endpoint: "videos.list").allowed }
        let result = try CommandRunner.tollgate("get", "http://127.0.0.1:9/youtube/v3/videos?id=v1", "--db", path)
        #expect(result.status == 3, "\(result.stderr)")
        let line = try #require(Self.errorLine(result))
        #expect(line.hasPrefix("tollgate: videos.list: Too many requests."), "\(line)")
        #expect(line.hasSuffix("· units charged 0"), "\(line)")
    }

    @Test("4: circuit open")
    func circuitOpen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("c.sqlite")
        let store = try SQLiteStore(path: path)
        _ = try await store.forceOpenCircuit(endpoint: "videos.list", duration: .seconds(600), policy: CircuitPolicy(),
                                             at: Date())
        let result = try CommandRunner.tollgate("get", "http://127.0.0.1:9/youtube/v3/videos?id=v1", "--db", path)
        #expect(result.status == 4, "\(result.stderr)")
        let line = try #require(Self.errorLine(result))
        #expect(line.hasPrefix("tollgate: videos.list: Service temporarily unavailable"), "\(line)")
    }

    @Test("5: quota spent")
    func quotaSpent() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("q.sqlite")
        let store = try SQLiteStore(path: path)
        _ = try await store.markQuotaExhausted(bucket: "youtube.search", configuredLimit: 100, endpoint: nil, at: Date())
        let result = try CommandRunner.tollgate("get", "http://127.0.0.1:9/youtube/v3/search?q=swift", "--db", path)
        #expect(result.status == 5, "\(result.stderr)")
        let line = try #require(Self.errorLine(result))
        #expect(line.hasPrefix("tollgate: search.list: Daily API quota exceeded"), "\(line)")
    }

    @Test("6: a network failure with nothing stored (a certificate no one trusts: one attempt, refunded)")
    func networkFailure() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TLSTestServer(in: directory, body: "private page")
        let result = try CommandRunner.tollgate("get", "\(server.baseURL)/youtube/v3/videos?id=1",
                                                "--db", directory.path("n.sqlite"),
                                                environment: ["SSL_CERT_FILE": "", "SSL_CERT_DIR": ""])
        #expect(result.status == 6, "\(result.stderr)")
        let line = try #require(Self.errorLine(result))
        #expect(line.hasPrefix("tollgate: videos.list: "), "\(line)")
        #expect(line.contains("(a private CA? trust its certificate with --cacert FILE or SSL_CERT_FILE)"), "\(line)")
        #expect(line.hasSuffix("· units charged 0"), "\(line)")
    }

    @Test("64: bad arguments, through ValidationError, for get, demo and an admin command alike",
          arguments: [["get", "ftp://example.com/file"], ["quota", "set-limit", "youtube", "--", "-5"],
                      ["circuit", "open", "videos.list", "--for", "0"], ["get", "--no-such-option", "http://x/"]])
    func usage(arguments: [String]) throws {
        let result = try CommandRunner.run(CommandRunner.tollgate, arguments)
        #expect(result.status == 64, "\(result.stderr)")
        let line = try #require(Self.errorLine(result), "\(result.stderr)")
        #expect(!line.isEmpty)
        #expect(result.stderr.contains("Usage:"), "\(result.stderr)")
    }

    @Test("64: demo refuses a file it would overwrite, in the same format")
    func demoUsage() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("existing.sqlite")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("not empty".utf8)))
        let result = try CommandRunner.tollgate("demo", "--db", path)
        #expect(result.status == 64, "\(result.stderr)")
        let line = try #require(Self.errorLine(result))
        #expect(line.contains("--replace"), "\(line)")
    }

    @Test("1: any other error, such as a database path that is a directory, for every kind of command",
          arguments: [["status"], ["quota", "show"], ["get", "http://127.0.0.1:9/youtube/v3/videos?id=v1"], ["migrate"]])
    func otherErrors(arguments: [String]) throws {
        let directory = try TemporaryDirectory()
        let result = try CommandRunner.run(CommandRunner.tollgate, arguments + ["--db", directory.url.path])
        #expect(result.status == 1, "\(result.stderr)")
        let line = try #require(Self.errorLine(result), "\(result.stderr)")
        #expect(line.contains("is a directory"), "\(line)")
    }
}
