import Foundation
import Logging
import PostgresNIO
import TollgateCore

/// Applies `Migrations/postgres/*.sql` in order, each in its own transaction with its checksum
/// recorded in `schema_migrations`, and refuses a database whose history is newer than the
/// library's or differs from it, before writing anything.
///
/// Many machines may open a new database at the same moment: each migration's transaction takes
/// `LOCK TABLE schema_migrations` and re-reads the history under it, so each migration runs once.
/// The lock is a table lock, held until the transaction ends, never a session advisory lock, so it
/// behaves the same behind a transaction-pooling PgBouncer.
struct PostgresMigrator: Sendable {
    let migrations: [Migration]
    let location: PostgresLocation

    init(migrations: [Migration] = PostgresMigrations.all, location: PostgresLocation) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.location = location
    }

    var libraryVersion: Int { migrations.last?.version ?? 0 }

    /// Every migration the library knows, with when it was applied, for `tollgate migrate --status`.
    /// Reads only: a database without Tollgate's schema lists every migration as pending.
    /// - Throws: `StoreRefusal.databaseIsNewer` or `StoreRefusal.migrationChecksumMismatch` for a
    ///   history this library does not know, or what the server throws.
    func statuses(_ connection: PostgresConnection, logger: Logger) async throws -> [MigrationStatus] {
        do {
            let applied = try await appliedMigrations(connection, logger: logger)
            try validate(applied)
            return migrations.map { MigrationStatus(migration: $0, appliedAt: applied[$0.version]?.appliedAt) }
        } catch {
            throw PostgresErrorMapping.map(error, server: "\(location)", operation: "reading the schema history")
        }
    }

    /// Refuses a database whose schema is not exactly the library's, writing nothing: for the
    /// commands that only read, which must not migrate a fleet's database behind its operator.
    /// - Throws: `StoreRefusal.migrationsPending` (run `tollgate migrate`), `StoreRefusal.databaseIsNewer`
    ///   or `StoreRefusal.migrationChecksumMismatch`.
    func requireCurrent(_ connection: PostgresConnection, logger: Logger) async throws {
        let statuses = try await statuses(connection, logger: logger)
        if statuses.contains(where: { !$0.isApplied }) {
            throw StoreRefusal.migrationsPending(
                path: "\(location)", databaseVersion: statuses.last(where: \.isApplied)?.migration.version ?? 0,
                libraryVersion: libraryVersion
            )
        }
    }

    /// Applies every pending migration and returns those this call applied.
    func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> [Migration] {
        do {
            // An up-to-date database (the usual case) is checked with reads alone.
            let alreadyApplied = try await appliedMigrations(connection, logger: logger)
            try validate(alreadyApplied)
            if migrations.allSatisfy({ alreadyApplied[$0.version] != nil }) { return [] }
            try await createHistoryTable(connection, logger: logger)
            var appliedNow: [Migration] = []
            for migration in migrations {
                if try await apply(migration, connection, logger: logger) { appliedNow.append(migration) }
            }
            return appliedNow
        } catch {
            throw PostgresErrorMapping.map(error, server: "\(location)", operation: "migrating the schema")
        }
    }

    private func apply(_ migration: Migration, _ connection: PostgresConnection, logger: Logger) async throws -> Bool {
        try await connection.run("BEGIN", logger: logger)
        do {
            // Waits for a migrator on another machine to finish; readers are not blocked.
            try await connection.run("LOCK TABLE schema_migrations IN SHARE ROW EXCLUSIVE MODE", logger: logger)
            let applied = try await appliedMigrations(connection, logger: logger)
            try validate(applied)
            guard applied[migration.version] == nil else {
                try await connection.run("COMMIT", logger: logger)
                return false
            }
            // The extended protocol runs one statement per query, and a migration is a script:
            // PL/pgSQL's EXECUTE runs it whole, as one statement of this transaction.
            // Scripts/embed-migrations.py refuses a script that contains these quotes.
            let script = "DO $tollgate_migration$ BEGIN EXECUTE $tollgate_script$" + migration.sql
                + "$tollgate_script$; END $tollgate_migration$"
            try await connection.run(PostgresQuery(unsafeSQL: script), logger: logger)
            try await connection.run("""
                INSERT INTO schema_migrations (version, name, checksum)
                VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                """, logger: logger)
            try await connection.run("COMMIT", logger: logger)
            return true
        } catch {
            _ = try? await connection.run("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// Creates the history table, in its own transaction: two machines creating it at once make
    /// one of them fail on PostgreSQL's catalog (23505, 42P07 or 42710 for its row type), and that
    /// one finds it made.
    private func createHistoryTable(_ connection: PostgresConnection, logger: Logger) async throws {
        do {
            try await connection.run("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version     bigint PRIMARY KEY,
                    name        text NOT NULL,
                    checksum    text NOT NULL,
                    applied_at  timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
        } catch where ["23505", "42P07", "42710"].contains(PostgresErrorMapping.sqlState(of: error)) {
            return
        }
    }

    private struct AppliedMigration {
        let version: Int
        let name: String
        let checksum: String
        let appliedAt: Date
    }

    private func appliedMigrations(_ connection: PostgresConnection, logger: Logger) async throws -> [Int: AppliedMigration] {
        let exists = try await connection.firstRow(
            "SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger
        )?.decode(Bool.self) ?? false
        guard exists else { return [:] }
        var applied: [Int: AppliedMigration] = [:]
        let query: PostgresQuery = "SELECT version, name, checksum, applied_at FROM schema_migrations"
        for row in try await connection.rows(query, logger: logger) {
            let (version, name, checksum, appliedAt) = try row.decode((Int, String, String, Date).self)
            applied[version] = AppliedMigration(version: version, name: name, checksum: checksum, appliedAt: appliedAt)
        }
        return applied
    }

    private func validate(_ applied: [Int: AppliedMigration]) throws {
        try MigrationHistory.validate(recordedChecksums: applied.mapValues(\.checksum), against: migrations)
    }
}
