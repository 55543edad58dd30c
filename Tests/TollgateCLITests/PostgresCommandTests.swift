import Foundation
import Testing
import TollgateFakeAPI
import TollgateTestSupport

/// `--db postgresql://…` as a fleet's operator uses it: `tollgate get` and `tollgate proxy` over
/// one PostgreSQL database, read back with psql. Runs when `TOLLGATE_POSTGRES_URL` names a server
/// (`.ci/run` starts one); skipped otherwise, as the PostgreSQL store's own suites are.
@Suite("tollgate over PostgreSQL", .enabled(if: PostgresServer.url != nil, "TOLLGATE_POSTGRES_URL is not set"))
struct PostgresCommandTests {
    /// Runs the tool on a thread of its own: waiting for it on the test's executor would starve the
    /// fake API that answers it in this process.
    static func tollgate(_ arguments: String...) async throws -> CommandResult {
        try await tollgate(arguments)
    }

    static func tollgate(_ arguments: [String]) async throws -> CommandResult {
        try await offPool { try CommandRunner.run(CommandRunner.tollgate, arguments) }
    }

    @Test("get charges the first answer and YouTube's 1 unit for the 304 after it; psql reads the same ledger")
    func getOverPostgres() async throws {
        let database = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(database) }
        let api = try await FakeYouTubeAPI.start()
        try await withStopping(api, stop: { await $0.stop() }) { api in
            let url = api.url("videos", ["id": "v1", "part": "snippet", "key": "SECRETKEY123456"]).absoluteString

            let first = try await Self.tollgate("get", url, "--db", database.url)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stderr.contains("videos.list · status 200 · source network · units charged 1 · 9999 units left today in youtube"))
            let second = try await Self.tollgate("get", url, "--db", database.url)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stdout == first.stdout)
            #expect(second.stderr.contains("source revalidated · units charged 1 · 9998 units left today in youtube"))
            #expect(api.receivedRequests.map(\.status) == [200, 304])

            let ledger = try PostgresServer.psql(database.url, "SELECT units, calls FROM quota_today WHERE endpoint = 'videos.list'")
            #expect(ledger == "2|2")
            let stored = try PostgresServer.psql(database.url, "SELECT url FROM cache_entries")
            #expect(stored.contains("key=REDACTED"))
            #expect(!stored.contains("SECRETKEY123456"))
        }
    }

    @Test("two proxies on one database share one quota ledger")
    func twoProxiesShareTheLedger() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let database = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(database) }
        let api = try await FakeYouTubeAPI.start()
        try await withStopping(api, stop: { await $0.stop() }) { api in
            var proxies: [(BackgroundCommand, String)] = []
            for _ in 0..<2 {
                let proxy = try BackgroundCommand(CommandRunner.tollgate, [
                    "proxy", "--listen", "127.0.0.1:0", "--upstream", api.baseURL.absoluteString, "--db", database.url,
                ])
                let banner = try #require(proxy.firstLine(), "the proxy exited before listening")
                let address = try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") })
                #expect(!banner.contains("postgres@"), "the banner names the server without its user or password: \(banner)")
                proxies.append((proxy, String(address)))
            }
            for (index, (_, base)) in proxies.enumerated() {
                let answer = try await offPool { try CurlResponse.fetch("\(base)/youtube/v3/videos?id=p\(index)&part=snippet") }
                #expect(answer.status == 200)
                #expect(answer.headers["x-tollgate-units"] == "1")
            }
            let ledger = try PostgresServer.psql(database.url, "SELECT units, calls FROM quota_today WHERE endpoint = 'videos.list'")
            #expect(ledger == "2|2")
            for (proxy, _) in proxies {
                let (status, stderr) = proxy.interrupt()
                #expect(status == 0, "proxy exit \(status): \(stderr)")
            }
        }
    }

    @Test("migrate over PostgreSQL: status and dry-run write nothing, migrate applies once; the commands that only look refuse an unmigrated database")
    func migrateOverPostgres() async throws {
        let database = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(database) }
        let hasSchema = "SELECT to_regclass('schema_migrations') IS NOT NULL"

        let pending = try await Self.tollgate("migrate", "--status", "--db", database.url)
        #expect(pending.status == 0, "\(pending.stderr)")
        #expect(pending.stdout.contains("0001_initial.sql  pending"))
        let dryRun = try await Self.tollgate("migrate", "--dry-run", "--db", database.url)
        #expect(dryRun.stdout.contains("would apply 0001_initial.sql"))
        for looking in [["status"], ["dashboard", "--once"], ["quota", "show"], ["cache", "stats"]] {
            let refused = try await Self.tollgate(looking + ["--db", database.url])
            #expect(refused.status == 1, "\(looking)")
            #expect(refused.stderr.contains("\(database.name) is at schema version 0 and this library needs version "),
                    "\(looking): \(refused.stderr)")
        }
        #expect(try PostgresServer.psql(database.url, hasSchema) == "f", "looking wrote nothing")

        let applied = try await Self.tollgate("migrate", "--db", database.url)
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(applied.stdout.contains("applied 0001_initial.sql"))
        #expect(!applied.stdout.contains("postgres@"), "messages name the server, never its user or password")
        let again = try await Self.tollgate("migrate", "--db", database.url)
        let appliedCount = applied.stdout.split(separator: "\n").filter { $0.hasPrefix("applied ") }.count
        #expect(again.stdout.contains("/\(database.name) is up to date (schema version \(appliedCount))."))
        let status = try await Self.tollgate("migrate", "--status", "--json", "--db", database.url)
        #expect(status.stdout.contains("\"applied_at\""))
        #expect(try PostgresServer.psql(database.url, "SELECT count(*) FROM schema_migrations") == "\(appliedCount)")
    }

    @Test("the operator's commands work on the fleet's database: limits, reconcile, circuits, throttles, cache, status")
    func adminCommandsOverPostgres() async throws {
        let database = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(database) }
        let api = try await FakeYouTubeAPI.start()
        let url = api.url("videos", ["id": "v1", "part": "snippet"]).absoluteString
        try await withStopping(api, stop: { await $0.stop() }) { api in
            func tollgate(_ arguments: String...) async throws -> CommandResult {
                try await Self.tollgate(arguments + ["--db", database.url])
            }

            #expect(try await tollgate("get", url).status == 0)
            let limit = try await tollgate("quota", "set-limit", "youtube", "5000")
            #expect(limit.stdout.contains("youtube: daily limit 5,000 (admin); 1 used, 4,999 left today"), "\(limit.stderr)")
            let reconciled = try await tollgate("quota", "reconcile", "--used", "120")
            #expect(reconciled.stdout.contains("120 units used (the ledger had 1; +119 units, recorded as an event)"))
            #expect(try PostgresServer.psql(database.url, "SELECT bucket_units, bucket_limit FROM quota_today LIMIT 1") == "120|5000")
            let shown = try await tollgate("quota", "show")
            #expect(shown.stdout.contains("youtube: 120/5,000 units used · 4,880 left · limit from admin"))

            // A circuit opened by the operator refuses the fleet's next request: nothing goes upstream.
            #expect(try await tollgate("circuit", "open", "videos.list", "--for", "600").status == 0)
            #expect(try PostgresServer.psql(database.url, "SELECT state FROM circuit_status WHERE endpoint = 'videos.list'") == "open")
            let refused = try await tollgate("get", api.url("videos", ["id": "v2", "part": "snippet"]).absoluteString)
            #expect(refused.status != 0)
            #expect(api.receivedRequests.count == 1)
            #expect(try await tollgate("circuit", "reset", "videos.list").stdout.contains("videos.list: OPEN → CLOSED (reset)"))

            let throttles = try await tollgate("throttle", "show", "--json")
            #expect(throttles.stdout.contains("\"endpoint\" : \"videos.list\""), "\(throttles.stdout)")
            #expect(try await tollgate("throttle", "reset", "--all").stdout.contains("every endpoint: 1 recorded request forgotten"))

            let status = try await tollgate("status", "--json")
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("\"used\" : 120"))
            let frame = try await tollgate("dashboard", "--once")
            #expect(frame.stdout.hasPrefix("Tollgate · 127.0.0.1:"), "\(frame.stdout)")
            #expect(frame.stdout.contains("120/5,000"))

            #expect(try await tollgate("cache", "clear").stdout.contains("Cleared every endpoint: 1 entry"))
            #expect(try PostgresServer.psql(database.url, "SELECT count(*) FROM cache_entries") == "0")
            let vacuum = try await tollgate("cache", "vacuum")
            #expect(vacuum.stdout.contains("Vacuumed and analyzed Tollgate's tables in 127.0.0.1:"), "\(vacuum.stderr)")
            let events = try PostgresServer.psql(database.url, "SELECT subject || ' ' || action FROM admin_events ORDER BY id")
            #expect(events.contains("cache clear") && events.contains("database vacuum") && events.contains("throttle reset"), "\(events)")
        }
    }

    @Test("an unreachable server is one clear line naming it, for every kind of command")
    func unreachableServer() async throws {
        let closed = "postgresql://tollgate:secret@127.0.0.1:9/tollgate"
        for command in [["status"], ["quota", "show"], ["migrate"], ["migrate", "--status"], ["circuit", "reset", "--all"]] {
            let result = try await Self.tollgate(command + ["--db", closed])
            #expect(result.status == 1, "\(command)")
            #expect(result.stderr.hasPrefix("tollgate: ") && result.stderr.contains("127.0.0.1:9"), "\(command): \(result.stderr)")
            #expect(!result.stderr.contains("secret"), "\(command): the password is never printed")
        }
    }
}

/// The server `TOLLGATE_POSTGRES_URL` names, driven through psql as an operator would.
enum PostgresServer {
    struct Database {
        let name: String
        let url: String
    }

    static var url: String? {
        ProcessInfo.processInfo.environment["TOLLGATE_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A fresh database on the server, named after no other.
    static func createDatabase() throws -> Database {
        guard let server = url, var components = URLComponents(string: server) else {
            throw PostgresUnavailable()
        }
        let name = "tollgate_cli_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        _ = try psql(server, "CREATE DATABASE \(name)")
        components.path = "/\(name)"
        return Database(name: String(name), url: components.string ?? server)
    }

    static func dropDatabase(_ database: Database) {
        guard let server = url else { return }
        _ = try? psql(server, "DROP DATABASE IF EXISTS \(database.name) WITH (FORCE)")
    }

    /// Runs one statement and returns its rows, unaligned (`a|b`), one per line.
    static func psql(_ url: String, _ sql: String) throws -> String {
        let result = try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["psql", url, "-X", "-tA", "-c", sql])
        guard result.status == 0 else { throw PsqlFailed(message: result.stderr) }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    struct PostgresUnavailable: Error {}
    struct PsqlFailed: Error, CustomStringConvertible {
        let message: String
        var description: String { "psql failed: \(message)" }
    }
}
