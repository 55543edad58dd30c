import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
import TollgateSQLite

@Suite("tollgate migrate")
struct MigrateCommandTests {
    @Test("applies pending migrations, says so, and is a no-op the second time")
    func appliesThenNoOp() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("cli.sqlite")

        let first = try CommandRunner.tollgate("migrate", "--db", path)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("applied 0001_initial.sql"))

        let second = try CommandRunner.tollgate("migrate", "--db", path)
        #expect(second.status == 0)
        #expect(second.stdout.contains("up to date"))
        #expect(!second.stdout.contains("applied 0001"))
    }

    @Test("--status and --dry-run list pending migrations and write nothing")
    func statusAndDryRunWriteNothing() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("inspect.sqlite")

        let status = try CommandRunner.tollgate("migrate", "--db", path, "--status")
        #expect(status.status == 0)
        #expect(status.stdout.contains("0001_initial.sql  pending"))
        let dryRun = try CommandRunner.tollgate("migrate", "--db", path, "--dry-run")
        #expect(dryRun.status == 0)
        #expect(dryRun.stdout.contains("would apply 0001_initial.sql"))
        #expect(!FileManager.default.fileExists(atPath: path))

        _ = try CommandRunner.tollgate("migrate", "--db", path)
        let applied = try CommandRunner.tollgate("migrate", "--db", path, "--status")
        #expect(applied.stdout.contains("0001_initial.sql  applied"))
        let nothing = try CommandRunner.tollgate("migrate", "--db", path, "--dry-run")
        #expect(nothing.stdout.contains("nothing would be applied"))
    }

    @Test("a file that is not SQLite gets a clear message, a non-zero exit, and stays untouched")
    func refusesNonDatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("photo.jpg")
        let bytes = Data([0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 0x42, count: 2000))
        try bytes.write(to: URL(fileURLWithPath: path))

        for arguments in [["migrate", "--db", path], ["migrate", "--db", path, "--status"]] {
            let result = try CommandRunner.run(CommandRunner.tollgate, arguments)
            #expect(result.status == 1)
            #expect(result.stderr.contains("is not a Tollgate database"))
        }
        #expect(FileManager.default.contents(atPath: path) == bytes)
    }

    @Test("a database from a newer Tollgate is refused with both versions named")
    func refusesNewerDatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("newer.sqlite")
        let future = Migration(version: 9, name: "future", sql: "CREATE TABLE future (id INTEGER);")
        _ = try SQLiteStore(path: path, configuration: .init(migrations: Migration.all + [future]))

        let result = try CommandRunner.tollgate("migrate", "--db", path)
        #expect(result.status == 1)
        #expect(result.stderr.contains("schema version 9"))
        #expect(result.stderr.contains("library's version \(Migration.all.count)"))
    }

    @Test("without --db the path comes from TOLLGATE_DB")
    func environmentFallback() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("from-env.sqlite")
        let result = try CommandRunner.tollgate("migrate", environment: ["TOLLGATE_DB": path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(path))
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test("an empty --db is a usage error")
    func emptyPathIsRefused() throws {
        let result = try CommandRunner.tollgate("migrate", "--db", "")
        #expect(result.status != 0)
        #expect(result.stderr.contains("--db needs a file path"))
    }

    @Test("several processes migrating one new file at once end with one schema, applied once")
    func concurrentProcesses() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("race.sqlite")
        let results = try await withThrowingTaskGroup(of: CommandResult.self) { group in
            for _ in 0..<4 {
                group.addTask { try CommandRunner.tollgate("migrate", "--db", path) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        #expect(results.filter { $0.stdout.contains("applied 0001_initial.sql") }.count == 1)
        let count = try CommandRunner.sqlite3(path, "SELECT COUNT(*) FROM schema_migrations")
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(Migration.all.count)")
    }

    @Test("sqlite3 reads quota_today from a file tollgate made while another process holds it open")
    func sqlite3ReadsWhileOpen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("shared.sqlite")
        #expect(try CommandRunner.tollgate("migrate", "--db", path).status == 0)

        let store = try SQLiteStore(path: path)
        try await store.write { db in
            try db.execute(sql: "INSERT INTO quota_buckets (bucket, daily_limit, updated_at_ms) VALUES ('youtube', 10000, 0)")
        }
        // Hold a write transaction open in this process while sqlite3 reads.
        let holder = await OpenWriteTransaction(store) { db in
            try db.execute(sql: "UPDATE quota_buckets SET daily_limit = 1 WHERE bucket = 'youtube'")
        }
        let result = try CommandRunner.sqlite3(path, "SELECT bucket, bucket_limit, bucket_remaining FROM quota_today")
        try await holder.commit()

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "youtube|10000|10000")
    }
}
