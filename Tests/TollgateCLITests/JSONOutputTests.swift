import Foundation
import Testing
import Tollgate
import TollgateTestSupport

@Suite("Every show command speaks JSON, and the shell completes the commands")
struct JSONOutputTests {
    private func object(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    @Test("circuit show, throttle show, cache stats and migrate --status print JSON with --json")
    func showCommands() async throws {
        let fixture = try AdminFixture()
        try await fixture.breaker.forceOpen(endpoint: "search.list", for: .seconds(300))
        _ = try await fixture.throttler.admit(endpoint: "videos.list")

        let circuits = try #require(try object(fixture.tollgate("circuit", "show", "--json").stdout) as? [[String: Any]])
        #expect(circuits.first?["endpoint"] as? String == "search.list")
        #expect(circuits.first?["state"] as? String == "open")
        let one = try #require(try object(fixture.tollgate("circuit", "show", "search.list", "--json").stdout) as? [String: Any])
        #expect(one["state"] as? String == "open")
        #expect((one["transitions"] as? [[String: Any]])?.first?["to"] as? String == "open")

        let throttles = try #require(try object(fixture.tollgate("throttle", "show", "--json").stdout) as? [[String: Any]])
        #expect(throttles.first?["endpoint"] as? String == "videos.list")
        #expect(throttles.first?["count"] as? Int == 1)

        let cache = try #require(try object(fixture.tollgate("cache", "stats", "--json").stdout) as? [String: Any])
        #expect(cache["entries"] as? Int == 0)
        #expect(cache["pacific_date"] as? String == PacificDay(containing: Date()).key)

        let migrations = try #require(try object(fixture.tollgate("migrate", "--status", "--json").stdout) as? [[String: Any]])
        #expect(migrations.map { $0["version"] as? Int } == Migration.all.map(\.version))
        #expect(migrations.allSatisfy { $0["applied_at"] is String })
        #expect(try fixture.tollgate("migrate", "--json").status == 64)
    }

    @Test("--generate-completion-script prints a completion script for bash, zsh and fish")
    func completions() throws {
        for shell in ["bash", "zsh", "fish"] {
            let script = try CommandRunner.tollgate("--generate-completion-script", shell)
            #expect(script.status == 0)
            #expect(script.stdout.contains("tollgate"))
            #expect(script.stdout.contains("reconcile"), "\(shell) completes subcommands")
        }
    }

    @Test("an operator's write command on a path with no database says it created one there; on the next run, and for get, nothing")
    func mistypedDatabaseIsSaid() throws {
        let directory = try TemporaryDirectory()
        let typo = directory.path("tolgate.sqlite")
        let first = try CommandRunner.tollgate("quota", "set-limit", "youtube", "5000", "--db", typo)
        #expect(first.status == 0)
        #expect(first.stderr == "tollgate: there was no database at \(typo): a new, empty one was created there.\n", "\(first.stderr)")
        let second = try CommandRunner.tollgate("circuit", "open", "videos.list", "--for", "60", "--db", typo)
        #expect(second.status == 0)
        #expect(second.stderr.isEmpty, "\(second.stderr)")
    }

    @Test("every command is quiet by default and shows the library's logs with --verbose or --log-level")
    func loggingEverywhere() throws {
        let directory = try TemporaryDirectory()
        let db = directory.path("logs.sqlite")
        let quiet = try CommandRunner.tollgate("migrate", "--db", db)
        #expect(quiet.status == 0)
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")
        let limit = try CommandRunner.tollgate("quota", "set-limit", "youtube", "20000", "--db", db, "--verbose")
        #expect(limit.stderr.contains("daily limit set to 20000"), "\(limit.stderr)")
        let silent = try CommandRunner.tollgate("quota", "set-limit", "youtube", "30000", "--db", db)
        #expect(silent.stderr.isEmpty, "\(silent.stderr)")
        let verboseMigrate = try CommandRunner.tollgate("migrate", "--db", directory.path("fresh.sqlite"), "--log-level", "debug")
        #expect(verboseMigrate.stderr.contains("applied migration"))
        for command in [["status"], ["quota", "show"], ["circuit", "show"], ["throttle", "show"], ["cache", "stats"], ["dashboard", "--once"]] {
            let result = try CommandRunner.run(CommandRunner.tollgate, command + ["--db", db, "--log-level", "debug"])
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
    }
}
