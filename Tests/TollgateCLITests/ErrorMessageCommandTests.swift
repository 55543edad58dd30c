import Foundation
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a careless user meets: numbers out of range, odd endpoint names, a `--db` that is a
/// directory, a missing, read-only, locked or full file, a port already taken. Each is one line on
/// standard error that says what happened and what to do, with exit status 64 for usage errors
/// and 1 for the rest, and nothing written.
@Suite("tollgate: errors a person can act on")
struct ErrorMessageCommandTests {
    static let readOnlyCommands: [[String]] = [
        ["status"], ["status", "--json"], ["quota", "show"], ["circuit", "show"], ["throttle", "show"],
        ["cache", "stats"], ["dashboard", "--once"],
    ]

    @Test("numbers past the documented maximum and endpoint names that are empty, '*', control characters or over 200 bytes are usage errors (64), and nothing is written",
          arguments: [
              (["quota", "set-limit", "youtube", "100000000000000000"], "at most 1,000,000,000,000 units"),
              (["quota", "set-limit", "youtube", "9223372036854775807"], "at most 1,000,000,000,000 units"),
              (["get", "--cost", "9223372036854775807", "http://127.0.0.1:9/x"], "--cost must be at most 1,000,000,000,000"),
              (["get", "--cost", "1000000000001", "http://127.0.0.1:9/x"], "--cost must be at most"),
              (["get", "--endpoint", "", "http://127.0.0.1:9/x"], "--endpoint must not be empty"),
              (["get", "--endpoint", "*", "http://127.0.0.1:9/x"], "--endpoint cannot be '*'"),
              (["get", "--endpoint", "tab\there", "http://127.0.0.1:9/x"], "must not contain control characters"),
              (["get", "--endpoint", "escape\u{1B}[31m", "http://127.0.0.1:9/x"], "must not contain control characters"),
              (["get", "--endpoint", String(repeating: "e", count: 201), "http://127.0.0.1:9/x"], "at most 200 bytes, not 201"),
              (["circuit", "open", "*", "--for", "5"], "cannot be '*'"),
              (["circuit", "show", String(repeating: "é", count: 101)], "at most 200 bytes, not 202"),
              (["throttle", "reset", "del\u{7F}"], "must not contain control characters"),
              (["cache", "clear", "--endpoint", "*"], "cannot be '*'"),
          ])
    func usageErrors(arguments: [String], message: String) throws {
        let fixture = try AdminFixture()
        let result = try CommandRunner.run(CommandRunner.tollgate, fixture.withDatabase(arguments))
        #expect(result.status == 64, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(try fixture.value("SELECT COUNT(*) FROM quota_events") == "0")
        #expect(try fixture.value("SELECT COUNT(*) FROM circuits") == "0")
    }

    @Test("a 200-byte endpoint name is accepted")
    func longestName() async throws {
        let fixture = try AdminFixture()
        let name = String(repeating: "e", count: 200)
        let result = try fixture.tollgate("circuit", "open", name, "--for", "5")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try fixture.value("SELECT COUNT(*) FROM circuits") == "1")
    }

    @Test("--db naming a directory says so, for reading and writing commands, and creates nothing in it")
    func directoryAsDatabase() throws {
        let directory = try TemporaryDirectory()
        for arguments in Self.readOnlyCommands + [["quota", "set-limit", "youtube", "5"], ["migrate"], ["migrate", "--status"],
                                                  ["get", "http://127.0.0.1:9/x"]] {
            let result = try CommandRunner.run(CommandRunner.tollgate, arguments + ["--db", directory.url.path])
            #expect(result.status == 1, "\(arguments): exit \(result.status)")
            #expect(result.stderr.contains("is a directory, not a database file"), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("SQLite error 14"), "\(result.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test("a database URL of another scheme is refused naming the scheme only, never its password, and creates no file")
    func unknownScheme() throws {
        for url in ["postgressql://tollgate:hunter2@db/tollgate", "jdbc:postgresql://tollgate:hunter2@db/tollgate"] {
            for arguments in Self.readOnlyCommands + [["quota", "set-limit", "youtube", "5"], ["migrate"], ["migrate", "--status"],
                                                      ["get", "http://127.0.0.1:9/x"]] {
                let result = try CommandRunner.run(CommandRunner.tollgate, arguments + ["--db", url])
                #expect(result.status == 1, "\(arguments): exit \(result.status)")
                #expect(result.stderr.contains("is neither a file path nor a postgresql:// or postgres:// URL"), "\(arguments): \(result.stderr)")
                #expect(!result.stderr.contains("hunter2"), "\(arguments): \(result.stderr)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: "postgressql:"), "no file was created from the URL")
    }

    @Test("a read-only command on a missing file says there is none and does not create it")
    func missingFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("typo.sqlite")
        for arguments in Self.readOnlyCommands {
            let result = try CommandRunner.run(CommandRunner.tollgate, arguments + ["--db", path])
            #expect(result.status == 1, "\(arguments): exit \(result.status)")
            #expect(result.stderr.contains("There is no database at \(path); nothing was created"), "\(result.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test("read-only commands neither wait for nor take the write lock: they answer while another process holds it")
    func readOnlyCommandsIgnoreTheWriteLock() async throws {
        let fixture = try AdminFixture()
        try await fixture.ledger.reserve(endpoint: "videos.list")
        let held = await OpenWriteTransaction(fixture.store) { db in
            try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (0, 'test', 'hold')")
        }
        for arguments in Self.readOnlyCommands + [["migrate", "--status"]] {
            let started = ContinuousClock.now
            let result = try CommandRunner.run(CommandRunner.tollgate, fixture.withDatabase(arguments))
            #expect(result.status == 0, "\(arguments): exit \(result.status): \(result.stderr)")
            // The busy timeout is 5 s: a command that asked for the lock would have waited that long.
            #expect(ContinuousClock.now - started < .seconds(4), "\(arguments) waited for the lock")
        }
        try await held.commit()
        #expect(try fixture.value("SELECT COUNT(*) FROM admin_events") == "1")
    }

    @Test("status lists every row; the dashboard, cut to 80×24, says how many rows it left out")
    func statusShowsEveryRow() async throws {
        let fixture = try AdminFixture()
        let ledger = try fixture.ledger
        let endpoints = (1...12).map { "endpoint\($0).list" }
        for endpoint in endpoints {
            try await ledger.reserve(endpoint: endpoint)
            try await fixture.breaker.forceOpen(endpoint: endpoint, for: .seconds(60))
            _ = try await fixture.throttler.admit(endpoint: endpoint)
        }
        let status = try fixture.tollgate("status")
        #expect(status.status == 0, "\(status.stderr)")
        for endpoint in endpoints {
            // Quota, circuit and throttle rows.
            #expect(status.stdout.components(separatedBy: endpoint + " ").count - 1 >= 3, "\(endpoint) is missing")
        }
        #expect(!status.stdout.contains("more"))

        let dashboard = try fixture.tollgate("dashboard", "--once")
        #expect(dashboard.status == 0, "\(dashboard.stderr)")
        #expect(dashboard.stdout.contains("and 8 more"), "\(dashboard.stdout)")
        #expect(dashboard.stdout.contains("… and"), "\(dashboard.stdout)")
    }

    @Test("a port already in use is one line that says so, and exit 1")
    func portInUse() async throws {
        let fixture = try AdminFixture()
        let api = try await FakeYouTubeAPI.start()
        let port = try #require(api.baseURL.port)
        let result = try fixture.tollgate("proxy", "--listen", "127.0.0.1:\(port)", "--upstream", api.baseURL.absoluteString)
        await api.stop()
        #expect(result.status == 1)
        #expect(result.stderr.contains("Cannot listen on 127.0.0.1:\(port): another process is already listening there"),
                "\(result.stderr)")
        #expect(!result.stderr.contains("errno"), "\(result.stderr)")
    }

    // MARK: Files this user cannot write

    /// The command line to run `tollgate` as an unprivileged user: as root, through setpriv as
    /// nobody (chmod does not stop root); otherwise as this user.
    /// `timeout` ends a command that wrongly keeps running (a proxy that started on a file it cannot write).
    static func unprivileged(_ arguments: [String]) throws -> CommandResult {
        let drop = getuid() == 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        return try CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"), ["timeout", "20"] + drop + [CommandRunner.tollgate.path] + arguments
        )
    }

    static let canDropPrivileges: Bool = {
        getuid() != 0 || (try? CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"),
                                                 ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "true"]))?.status == 0
    }()

    @Test("on a read-only file in a read-only directory, read-only commands work and writes say what to do",
          .enabled(if: canDropPrivileges, "running as root without setpriv(1): permissions cannot stop this process"))
    func readOnlyFileAndDirectory() async throws {
        let fixture = try AdminFixture()
        try await fixture.ledger.reserve(endpoint: "videos.list", cost: 7)
        let folder = fixture.directory.url.appending(path: "locked").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let path = folder + "/copy.sqlite"
        _ = try fixture.value("VACUUM INTO '\(path)'")
        let bytes = try #require(fileBytes(path))
        if getuid() == 0 { chown(path, 65534, 65534); chown(folder, 65534, 65534) }
        chmod(fixture.directory.url.path, 0o755)
        chmod(path, 0o400)
        chmod(folder, 0o500)
        defer { chmod(folder, 0o755); chmod(path, 0o600) }

        for arguments in Self.readOnlyCommands + [["migrate", "--status"]] {
            let result = try Self.unprivileged(arguments + ["--db", path])
            #expect(result.status == 0, "\(arguments): exit \(result.status): \(result.stderr)")
        }
        let quota = try Self.unprivileged(["quota", "show", "--db", path])
        #expect(quota.stdout.contains("videos.list  7 units  1 calls"), "\(quota.stdout)")

        for arguments in [["quota", "set-limit", "youtube", "5"], ["cache", "clear"], ["circuit", "open", "x.list", "--for", "5"],
                          ["proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9"]] {
            let result = try Self.unprivileged(arguments + ["--db", path])
            #expect(result.status == 1, "\(arguments): exit \(result.status)")
            #expect(result.stderr.contains("cannot be written") && result.stderr.contains("write access"), "\(result.stderr)")
            #expect(!result.stderr.contains("while executing"), "\(result.stderr)")
        }
        #expect(fileBytes(path) == bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["copy.sqlite"])
    }

    @Test("on a read-only file system, read-only commands work and writes say what to do",
          .enabled(if: MountNamespace.isAvailable, "needs root and unshare(1) to mount a read-only file system; not available here"))
    func readOnlyFileSystem() async throws {
        let fixture = try AdminFixture()
        try await fixture.ledger.reserve(endpoint: "videos.list", cost: 7)
        let folder = fixture.directory.url.appending(path: "mounted").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let path = folder + "/copy.sqlite"
        _ = try fixture.value("VACUUM INTO '\(path)'")
        let bytes = try #require(fileBytes(path))
        let tollgate = CommandRunner.tollgate.path
        let result = try MountNamespace.run("""
            mount --bind '\(folder)' '\(folder)' && mount -o remount,bind,ro '\(folder)' || exit 90
            touch '\(folder)/probe' 2>/dev/null && exit 91
            '\(tollgate)' quota show --db '\(path)' || exit 92
            '\(tollgate)' status --db '\(path)' >/dev/null || exit 93
            '\(tollgate)' quota set-limit youtube 5 --db '\(path)'; echo "set-limit exit $?"
            """)
        #expect(result.status == 0, "exit \(result.status): \(result.stderr)")
        #expect(result.stdout.contains("videos.list  7 units  1 calls"), "\(result.stdout)")
        #expect(result.stdout.contains("set-limit exit 1"), "\(result.stdout)")
        #expect(result.stderr.contains("cannot be written: the file, its directory or its file system is read-only"), "\(result.stderr)")
        #expect(fileBytes(path) == bytes)
    }

    @Test("on a full disk, read-only commands work, a write says the disk is full, and cache clear frees the file's pages once there is room for its log",
          .enabled(if: MountNamespace.isAvailable, "needs root and unshare(1) to mount a small tmpfs; not available here"))
    func fullDisk() async throws {
        let fixture = try AdminFixture()
        try await fixture.ledger.reserve(endpoint: "videos.list", cost: 7)
        let body = Data(repeating: 42, count: 300_000)
        for index in 0..<4 {
            _ = try await fixture.store.storeCacheEntry(
                NewCacheEntry(resourceKey: "k\(index)", variantKey: "", endpoint: "videos.list", method: "GET",
                              url: "https://example.com/\(index)", vary: nil, status: 200, headers: [], etag: nil,
                              lastModified: nil, freshUntilMs: nil, nowMs: Int64(Date().timeIntervalSince1970 * 1000),
                              body: body),
                retention: CacheRetention(maxEntries: 100, maxTotalBodyBytes: 1 << 30, expiredBeforeMs: 0),
                activity: CacheActivity()
            )
        }
        let source = fixture.directory.path("full-source.sqlite")
        _ = try fixture.value("VACUUM INTO '\(source)'")
        let folder = fixture.directory.url.appending(path: "small").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let path = folder + "/full.sqlite"
        let tollgate = CommandRunner.tollgate.path
        let result = try MountNamespace.run("""
            mount -t tmpfs -o size=4m tmpfs '\(folder)' || exit 90
            cp '\(source)' '\(path)' || exit 91
            dd if=/dev/zero of='\(folder)/filler' bs=4k 2>/dev/null
            '\(tollgate)' quota show --db '\(path)' || exit 92
            '\(tollgate)' cache stats --db '\(path)' || exit 93
            '\(tollgate)' quota set-limit youtube 5 --db '\(path)'; echo "set-limit exit $?"
            truncate -s -256k '\(folder)/filler'
            '\(tollgate)' cache clear --db '\(path)'; echo "clear exit $?"
            '\(tollgate)' cache stats --db '\(path)'
            """)
        #expect(result.status == 0, "exit \(result.status): \(result.stderr)")
        #expect(result.stdout.contains("videos.list  7 units  1 calls"), "\(result.stdout)")
        #expect(result.stdout.contains("set-limit exit 1"), "\(result.stdout)")
        #expect(result.stderr.contains("is full"), "\(result.stderr)")
        #expect(result.stdout.contains("clear exit 0"), "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("Cleared every endpoint: 4 entries"), "\(result.stdout)")
        #expect(result.stdout.contains("0 entries stored"), "\(result.stdout)")
    }
}

