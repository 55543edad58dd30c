import Foundation
import Testing
import TollgateCore
import TollgatePostgres
import TollgateSQLite

@Suite("Embedded PostgreSQL migrations")
struct PostgresMigrationDriftTests {
    static let migrationsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Migrations/postgres")

    @Test("the compiled migrations are exactly Migrations/postgres/*.sql (run Scripts/embed-migrations.py if not)")
    func embeddedMatchFiles() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.migrationsDirectory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
        #expect(files == PostgresMigrations.all.map(\.fileName))
        for migration in PostgresMigrations.all {
            let text = try String(contentsOf: Self.migrationsDirectory.appending(path: migration.fileName), encoding: .utf8)
            #expect(text == migration.sql, "\(migration.fileName) differs from its embedded copy")
        }
    }

    @Test("versions are unique and increasing from 1")
    func versionsAreOrdered() {
        #expect(PostgresMigrations.all.map(\.version) == Array(1...PostgresMigrations.all.count))
    }

    @Test("the PostgreSQL schema has the six views SQLite users read, with the same columns")
    func sameViews() throws {
        let sql = PostgresMigrations.all.map(\.sql).joined(separator: "\n")
        for view in ["quota_today", "quota_daily", "quota_windows", "cache_stats", "circuit_status", "throttle_status"] {
            #expect(sql.contains("CREATE VIEW \(view) AS"), "\(view) is missing")
        }
    }
}
