import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

@Suite("Embedded migrations")
struct MigrationDriftTests {
    static let migrationsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Migrations")

    @Test("the compiled migrations are exactly Migrations/*.sql (run Scripts/embed-migrations.py if not)")
    func embeddedMatchFiles() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.migrationsDirectory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
        #expect(files == Migration.all.map(\.fileName))
        for migration in Migration.all {
            let text = try String(contentsOf: Self.migrationsDirectory.appending(path: migration.fileName), encoding: .utf8)
            #expect(text == migration.sql, "\(migration.fileName) differs from its embedded copy")
        }
    }

    @Test("versions are unique and increasing from 1")
    func versionsAreOrdered() {
        #expect(Migration.all.map(\.version) == Array(1...Migration.all.count))
    }
}
