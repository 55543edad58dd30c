import Foundation
import Testing
import TollgateFakeAPI
import TollgateTestSupport

/// `--db postgresql://…` as a fleet's operator uses it: `tollgate get` and `tollgate proxy` over
/// one PostgreSQL database, read back with psql. Runs when `TOLLGATE_POSTGRES_URL` names a server
/// (`.ci/run` starts one); skipped otherwise, as the PostgreSQL store's own suites are.
@Suite("tollgate over PostgreSQL", .enabled(if: PostgresServer.url != nil, "TOLLGATE_POSTGRES_URL is not set"))
struct PostgresCommandTests {
    @Test("get charges the first answer and nothing for the 304 after it; psql reads the same ledger")
    func getOverPostgres() async throws {
        let database = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(database) }
        let api = try await FakeYouTubeAPI.start()
        let url = api.url("videos", ["id": "v1", "part": "snippet", "key": "SECRETKEY123456"]).absoluteString

        let first = try CommandRunner.tollgate("get", url, "--db", database.url)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("videos.list · status 200 · source network · units charged 1 · 9999 units left today in youtube"))
        let second = try CommandRunner.tollgate("get", url, "--db", database.url)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout == first.stdout)
        #expect(second.stderr.contains("source revalidated · units charged 0 · 9999 units left today in youtube"))
        #expect(api.receivedRequests.map(\.status) == [200, 304])

        let ledger = try PostgresServer.psql(database.url, "SELECT units, calls FROM quota_today WHERE endpoint = 'videos.list'")
        #expect(ledger == "1|2")
        let stored = try PostgresServer.psql(database.url, "SELECT url FROM cache_entries")
        #expect(stored.contains("key=REDACTED"))
        #expect(!stored.contains("SECRETKEY123456"))
        await api.stop()
    }

    @Test("two proxies on one database share one quota ledger")
    func twoProxiesShareTheLedger() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let database = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(database) }
        let api = try await FakeYouTubeAPI.start()
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
        await api.stop()
    }

    @Test("a command that operates a SQLite file refuses a postgresql:// URL and says what works")
    func fileCommandsRefuseAURL() throws {
        let database = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(database) }
        for command in [["status"], ["quota", "show"], ["migrate"]] {
            let result = try CommandRunner.run(CommandRunner.tollgate, command + ["--db", database.url])
            #expect(result.status != 0)
            #expect(result.stderr.contains("--db: a postgresql:// URL works with `tollgate get` and `tollgate proxy` only"))
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
