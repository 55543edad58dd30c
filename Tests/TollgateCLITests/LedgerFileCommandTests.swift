import Foundation
import Testing
import TollgateTestSupport

@Suite("The ledger's file from the command line: nothing but a Tollgate database is migrated or replaced")
struct LedgerFileCommandTests {
    @Test("demo --replace refuses another application's database and a text file, leaving them as they were")
    func replaceOnlyTollgate() throws {
        let directory = try TemporaryDirectory()
        let theirs = directory.path("theirs.sqlite")
        _ = try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"),
                                  ["sqlite3", theirs, "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('keep me');"])
        let text = directory.path("notes.txt")
        try Data("my notes\n".utf8).write(to: URL(fileURLWithPath: text))
        for path in [theirs, text] {
            let before = try #require(fileBytes(path))
            let result = try CommandRunner.tollgate("demo", "--db", path, "--replace")
            #expect(result.status != 0, "refused: \(result.stdout)")
            #expect(result.stderr.contains("left untouched"), "\(result.stderr)")
            #expect(fileBytes(path) == before, "\(path) unchanged")
        }
        let notes = try CommandRunner.sqlite3(theirs, "SELECT text FROM notes")
        #expect(notes.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "keep me")
    }

    @Test("migrate refuses another application's database without switching it to WAL or printing SQL")
    func migrateRefusesForeign() throws {
        let directory = try TemporaryDirectory()
        let theirs = directory.path("theirs.sqlite")
        _ = try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"),
                                  ["sqlite3", theirs, "CREATE TABLE quota_events (what TEXT); INSERT INTO quota_events VALUES ('x');"])
        let before = try #require(fileBytes(theirs))
        let result = try CommandRunner.tollgate("migrate", "--db", theirs)
        #expect(result.status != 0)
        #expect(result.stderr.contains("another application's SQLite database"), "\(result.stderr)")
        #expect(!result.stderr.contains("CREATE TABLE"), "no migration SQL printed")
        #expect(fileBytes(theirs) == before)
        let mode = try CommandRunner.sqlite3(theirs, "PRAGMA journal_mode")
        #expect(mode.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "delete")
    }
}
