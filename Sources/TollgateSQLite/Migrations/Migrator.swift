import Foundation
import TollgateCore

/// Applies `Migrations/*.sql` in order, each in its own `BEGIN IMMEDIATE` transaction, and refuses
/// databases whose history does not match the library's.
///
/// Several processes may migrate one new file at the same moment: each migration re-reads the
/// applied set inside its write transaction, so every migration runs exactly once.
struct Migrator: Sendable {
    let migrations: [Migration]

    init(migrations: [Migration] = Migration.all) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    var libraryVersion: Int { migrations.last?.version ?? 0 }

    /// Each migration with whether and when it was applied, after checking the database's
    /// history against the library. Reads only.
    func status(_ db: Database) throws -> [MigrationStatus] {
        let applied = try appliedMigrations(db)
        try validate(applied)
        return migrations.map { migration in
            MigrationStatus(migration: migration, appliedAt: applied[migration.version]?.appliedAt)
        }
    }

    /// Applies every pending migration and returns those this call applied.
    func migrate(_ db: Database, now: () -> Date) throws -> [Migration] {
        // An up-to-date file (the usual case) is checked with reads alone, so opening it does not
        // wait for another process's write lock. Migrations are never removed, so "nothing
        // pending" cannot change under us; anything pending is re-checked below under the lock.
        let alreadyApplied = try appliedMigrations(db)
        try validate(alreadyApplied)
        if migrations.allSatisfy({ alreadyApplied[$0.version] != nil }) {
            try markIfUnmarked(db)
            return []
        }
        var appliedNow: [Migration] = []
        for migration in migrations {
            let didApply = try db.inTransaction(.immediate) {
                try db.execute(sql: Self.createHistoryTable)
                let applied = try appliedMigrations(db)
                try validate(applied)
                guard applied[migration.version] == nil else { return false }
                try db.executeScript(migration.sql)
                try DatabaseOwnership.mark(db)
                try db.execute(
                    sql: "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
                    arguments: [migration.version, migration.name, migration.checksum,
                     Self.timestamp(now())]
                )
                return true
            }
            if didApply { appliedNow.append(migration) }
        }
        return appliedNow
    }

    /// Marks a file that a release before the mark made, once; a marked file costs one pragma.
    private func markIfUnmarked(_ db: Database) throws {
        guard try DatabaseOwnership.of(db, firstMigration: migrations.first) == .unmarkedTollgate else { return }
        try db.inTransaction(.immediate) { try DatabaseOwnership.mark(db) }
    }

    private struct AppliedMigration {
        let version: Int
        let name: String
        let checksum: String
        let appliedAt: Date?
    }

    private func appliedMigrations(_ db: Database) throws -> [Int: AppliedMigration] {
        let tableExists = try db.fetchOne(
            sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ) != nil
        guard tableExists else { return [:] }
        var applied: [Int: AppliedMigration] = [:]
        for row in try db.fetchAll(sql: "SELECT version, name, checksum, applied_at FROM schema_migrations") {
            let version = try row.decode(Int.self, forColumn: "version")
            applied[version] = AppliedMigration(
                version: version,
                name: try row.decode(String.self, forColumn: "name"),
                checksum: try row.decode(String.self, forColumn: "checksum"),
                appliedAt: try row.decode(String?.self, forColumn: "applied_at").flatMap(Self.date(fromTimestamp:))
            )
        }
        return applied
    }

    private func validate(_ applied: [Int: AppliedMigration]) throws {
        try MigrationHistory.validate(recordedChecksums: applied.mapValues(\.checksum), against: migrations)
    }

    private static let createHistoryTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version     INTEGER PRIMARY KEY NOT NULL,
            name        TEXT NOT NULL,
            checksum    TEXT NOT NULL,
            applied_at  TEXT NOT NULL
        ) STRICT
        """

    // ISO8601DateFormatter is not Sendable: one per call, and migrations are rare.
    private static func timestamp(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    private static func date(fromTimestamp text: String) -> Date? {
        ISO8601DateFormatter().date(from: text)
    }
}
