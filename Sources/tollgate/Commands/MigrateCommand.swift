import ArgumentParser
import Foundation
import TollgateCore
import TollgatePostgres
import TollgateSQLite

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending schema migrations to the database.",
        discussion: "Opening a database from the library applies them too; this command shows what happens."
    )

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "List every migration as applied or pending; change nothing.")
    var status = false

    @Flag(help: "Show what would be applied; change nothing.")
    var dryRun = false

    @Flag(help: "With --status: print JSON instead of text.")
    var json = false

    /// One migration as `--status --json` prints it.
    struct StatusRow: Codable {
        var version: Int
        var name: String
        var appliedAt: Date?
    }

    func validate() throws {
        if status && dryRun {
            throw ValidationError("--status and --dry-run cannot be combined.")
        }
        if json && !status {
            throw ValidationError("--json goes with --status.")
        }
    }

    func run() async throws {
        try database.requireKnownScheme()
        if status || dryRun {
            try await inspect()
        } else {
            try await apply()
        }
    }

    private func apply() async throws {
        let logger = logging.bootstrap()
        let name: String
        let applied: [Migration]
        let version: Int
        if database.isPostgres() {
            let store = try await PostgresStore(url: database.resolvedPath(), logger: logger)
            (name, applied, version) = ("\(store.location)", store.migrationsAppliedAtOpen, PostgresMigrations.all.last?.version ?? 0)
            await store.shutdown()
        } else {
            let path = try database.preparedPath()
            let store = try SQLiteStore(path: path, logger: logger)
            (name, applied, version) = (path, store.migrationsAppliedAtOpen, Migration.all.last?.version ?? 0)
        }
        if applied.isEmpty {
            print("\(name) is up to date (schema version \(version)).")
        } else {
            for migration in applied {
                print("applied \(migration.fileName)")
            }
            print("\(name) is at schema version \(version).")
        }
    }

    private func inspect() async throws {
        let path = database.resolvedPath()
        let statuses = database.isPostgres()
            ? try await PostgresStore.migrationStatus(url: path, logger: logging.bootstrap())
            : try SQLiteStore.migrationStatus(path: path)
        // A URL may carry a password: messages name the server as the store does.
        let name = database.isPostgres() ? "\(try PostgresLocation(url: path))" : path
        let pending = statuses.filter { !$0.isApplied }
        if status && json {
            try printJSON(statuses.map { StatusRow(version: $0.migration.version, name: $0.migration.name, appliedAt: $0.appliedAt) })
        } else if status {
            for status in statuses {
                let state = status.appliedAt.map { "applied \($0.formatted(.iso8601))" } ?? "pending"
                print("\(status.migration.fileName)  \(state)")
            }
        } else if pending.isEmpty {
            print("\(name) is up to date: nothing would be applied.")
        } else {
            for status in pending {
                print("would apply \(status.migration.fileName)")
            }
        }
    }
}
