import ArgumentParser
import Foundation
import TollgateStore

struct MigrateCommand: ParsableCommand {
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

    func run() throws {
        try database.requireSQLite()
        try reportingStoreErrors {
            if status || dryRun {
                try inspect()
            } else {
                try apply()
            }
        }
    }

    private func apply() throws {
        let path = try database.preparedPath()
        let store = try SQLiteStore(path: path, logger: logging.bootstrap())
        let version = Migration.all.last?.version ?? 0
        if store.migrationsAppliedAtOpen.isEmpty {
            print("\(path) is up to date (schema version \(version)).")
        } else {
            for migration in store.migrationsAppliedAtOpen {
                print("applied \(migration.fileName)")
            }
            print("\(path) is at schema version \(version).")
        }
    }

    private func inspect() throws {
        let path = database.resolvedPath()
        let statuses = try SQLiteStore.migrationStatus(path: path)
        let pending = statuses.filter { !$0.isApplied }
        if status && json {
            try printJSON(statuses.map { StatusRow(version: $0.migration.version, name: $0.migration.name, appliedAt: $0.appliedAt) })
        } else if status {
            for status in statuses {
                let state = status.appliedAt.map { "applied \($0.formatted(.iso8601))" } ?? "pending"
                print("\(status.migration.fileName)  \(state)")
            }
        } else if pending.isEmpty {
            print("\(path) is up to date: nothing would be applied.")
        } else {
            for status in pending {
                print("would apply \(status.migration.fileName)")
            }
        }
    }
}

/// Prints a store's refusal as one clear line on standard error and exits with status 1.
func reportingStoreErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as StoreError {
        printError("error: \(error)")
        throw ExitCode.failure
    } catch let error as DatabaseError {
        printError("error: \(error)")
        throw ExitCode.failure
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
