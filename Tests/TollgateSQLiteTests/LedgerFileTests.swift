import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file is the ledger: "is this ours?" has one answer, and a file that is not Tollgate's, not
/// a file, or no longer at its path is refused before anything is written.
@Suite("The ledger's file: marked as Tollgate's, others refused untouched, moves noticed")
struct LedgerFileTests {
    /// Another application's database, in rollback-journal mode, made through SQLite directly.
    private func foreignDatabase(at path: String, _ sql: String) throws {
        let database = try Database(path: path)
        try database.executeScript(sql)
    }

    private func applicationID(_ path: String) throws -> Int64? {
        try Database(path: path, mode: .readOnly).fetchValue(sql: "PRAGMA application_id").int64
    }

    @Test("a new file is marked with Tollgate's application ID; a file an earlier release made is marked on open")
    func marked() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ledger.sqlite")
        _ = try SQLiteStore(path: path)
        #expect(try applicationID(path) == Int64(DatabaseOwnership.applicationID))

        // As a release before the mark left it: the same schema and history, application ID 0.
        try Database(path: path).execute(sql: "PRAGMA application_id = 0")
        #expect(try applicationID(path) == 0)
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.migrationsAppliedAtOpen.isEmpty, "no migration is needed")
        #expect(try applicationID(path) == Int64(DatabaseOwnership.applicationID))
    }

    @Test("another application's SQLite file is refused: no table added, journal mode unchanged, bytes the same",
          arguments: [
              "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('keep me');",
              // Rails keeps a table of this name, with other columns.
              "CREATE TABLE schema_migrations (version TEXT PRIMARY KEY); INSERT INTO schema_migrations VALUES ('1');",
              // A name clash with one of Tollgate's own tables.
              "CREATE TABLE quota_events (id INTEGER PRIMARY KEY, what TEXT); INSERT INTO quota_events (what) VALUES ('x');",
              "PRAGMA application_id = 1234; CREATE TABLE t (x);",
          ])
    func foreignRefused(sql: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("theirs.sqlite")
        try foreignDatabase(at: path, sql)
        let before = try #require(fileBytes(path))

        let error = #expect(throws: StoreError.self) { try SQLiteStore(path: path) }
        guard case .notTollgate(let refusedPath, _) = error else {
            Issue.record("expected notTollgate, got \(String(describing: error))")
            return
        }
        #expect(refusedPath == path)
        #expect(error?.description.contains("another application's SQLite database") == true)
        #expect(throws: StoreError.self) { try SQLiteStore(path: path, configuration: .init(access: .readOnly)) }
        #expect(throws: StoreError.self) { try SQLiteStore.migrationStatus(path: path) }
        #expect(fileBytes(path) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(try Database(path: path, mode: .readOnly).fetchValue(sql: "PRAGMA journal_mode").string == "delete")
        #expect(throws: StoreError.self) { try SQLiteStore.requireReplaceable(path: path) }
    }

    @Test("what may be replaced: nothing, an empty file, a Tollgate database; not a text file")
    func replaceable() throws {
        let directory = try TemporaryDirectory()
        try SQLiteStore.requireReplaceable(path: directory.path("missing.sqlite"))
        let empty = directory.path("empty.sqlite")
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        try SQLiteStore.requireReplaceable(path: empty)
        let ours = directory.path("ours.sqlite")
        _ = try SQLiteStore(path: ours)
        try SQLiteStore.requireReplaceable(path: ours)
        let text = directory.path("notes.txt")
        try Data("my notes\n".utf8).write(to: URL(fileURLWithPath: text))
        #expect(throws: StoreError.notADatabase(path: text)) { try SQLiteStore.requireReplaceable(path: text) }
        #expect(throws: StoreError.notARegularFile(path: "/dev/null")) { try SQLiteStore.requireReplaceable(path: "/dev/null") }
    }

    @Test("a device or a FIFO is refused before SQLite opens it, and nothing is created beside it")
    func notARegularFile() throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.path("pipe.sqlite")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: StoreError.notARegularFile(path: fifo)) { try SQLiteStore(path: fifo) }
        #expect(throws: StoreError.notARegularFile(path: fifo)) {
            try SQLiteStore(path: fifo, configuration: .init(access: .readOnly))
        }
        #expect(!FileManager.default.fileExists(atPath: fifo + "-journal"))
        #expect(!FileManager.default.fileExists(atPath: fifo + "-wal"))

        #expect(throws: StoreError.notARegularFile(path: "/dev/null")) { try SQLiteStore(path: "/dev/null") }
        #expect(!FileManager.default.fileExists(atPath: "/dev/null-journal"))
        #expect(!FileManager.default.fileExists(atPath: "/dev/null-wal"))
    }

    @Test("SQLite's special names are refused: ':memory:' and the empty path create no file")
    func specialNames() throws {
        let existedBefore = FileManager.default.fileExists(atPath: ":memory:")
        for name in [":memory:", ""] {
            let error = #expect(throws: StoreRefusal.self) { try SQLiteStore(path: name) }
            #expect(error?.description.contains("SQLite's name") == true)
        }
        #expect(FileManager.default.fileExists(atPath: ":memory:") == existedBefore, "no file named :memory: was created")
    }

    @Test("a database created through a dangling symbolic link is readable by its owner only")
    func danglingLinkIsPrivate() throws {
        let directory = try TemporaryDirectory()
        let target = directory.path("target.sqlite")
        let link = directory.path("link.sqlite")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "target.sqlite")
        _ = try SQLiteStore(path: link)
        let attributes = try FileManager.default.attributesOfItem(atPath: target)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test("a file deleted or replaced under an open store stops every write with a clear error")
    func movedFileStopsWrites() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ledger.sqlite")
        let store = try SQLiteStore(path: path)
        try await store.write { db in try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (0, 'test', 'before')") }

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        let error = await #expect(throws: StoreError.self) {
            try await store.write { db in try db.execute(sql: "SELECT 1") }
        }
        #expect(error == .fileMoved(path: path))
        #expect(error?.isStorageFailure == true, "a gate's ledger-failure policy applies")
        #expect(throws: StoreError.fileMoved(path: path)) { try store.write { db in try db.execute(sql: "SELECT 1") } }

        // Replaced by another file at the same path: still not the file this store writes into.
        _ = try SQLiteStore(path: path)
        #expect(throws: StoreError.fileMoved(path: path)) { try store.write { db in try db.execute(sql: "SELECT 1") } }
    }

    @Test("a file moved away, or swapped for another by two renames, stops writes too; a change of mode and a checkpoint do not")
    func renamedFileStopsWrites() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ledger.sqlite")
        let store = try SQLiteStore(path: path)
        func touch(_ store: SQLiteStore) async throws {
            try await store.write { db in try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (0, 'test', 'touch')") }
        }
        try await touch(store)
        // The file's change time moves and the path still names it: writes go on.
        #expect(chmod(path, 0o600) == 0)
        // A checkpoint writes the file itself, which moves its change time too.
        _ = try Database(path: path).fetchValue(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        try await touch(store)
        try await touch(store)

        // Moved away, nothing in its place.
        let away = directory.path("moved.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.moveItem(atPath: path + suffix, toPath: away + suffix) }
        await #expect(throws: StoreError.fileMoved(path: path)) { try await touch(store) }

        // Moved back: the same file at the path again, so writes go on.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.moveItem(atPath: away + suffix, toPath: path + suffix) }
        try await touch(store)

        // Swapped by two renames: the opened file still has its one link, under another name.
        let other = directory.path("other.sqlite")
        _ = try SQLiteStore(path: other)
        #expect(rename(path, away) == 0)
        #expect(rename(other, path) == 0)
        await #expect(throws: StoreError.fileMoved(path: path)) { try await touch(store) }
        #expect(throws: StoreError.fileMoved(path: path)) { try store.write { db in try db.execute(sql: "SELECT 1") } }
    }

    @Test("releasing the check's descriptor keeps the process's locks: another process cannot leave WAL mode meanwhile")
    func releasedDescriptorKeepsLocks() throws {
        // The check's own descriptor of the file, released inside the transaction: POSIX locks
        // belong to the process and the file, and closing a descriptor opened for reading would
        // release them all, the transaction's lock on the database file included.
        let refusal = try Self.leavingWAL(whileInsideAWrite: { path in _ = try #require(OpenedFile(path: path)).isAtPath })
        #expect(refusal.contains("locked"), "sqlite3 was refused: \(refusal)")
    }

    @Test("opening and releasing a second store on the file keeps the first one's locks: its checks read no byte of an open file")
    func secondStoreKeepsLocks() throws {
        let refusal = try Self.leavingWAL(whileInsideAWrite: { path in _ = try SQLiteStore(path: path) })
        #expect(refusal.contains("locked"), "sqlite3 was refused: \(refusal)")
    }

    /// Runs `meanwhile` inside a store's write transaction, then has the `sqlite3` shell (another
    /// process) try to take the file out of WAL mode, which the transaction's lock on the file
    /// forbids. Returns what the shell printed when it failed, or "" when it succeeded.
    private static func leavingWAL(whileInsideAWrite meanwhile: (String) throws -> Void) throws -> String {
        let directory = try TemporaryDirectory()
        let path = directory.path("ledger.sqlite")
        let store = try SQLiteStore(path: path)
        let refusal = try store.write { db -> String in
            try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (0, 'test', 'inside')")
            try meanwhile(path)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["sqlite3", path, ".timeout 0", "PRAGMA journal_mode = DELETE;"]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = Pipe()
            try process.run()
            let refusal = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return process.terminationStatus == 0 ? "" : refusal
        }
        #expect(try store.read { db in try db.fetchValue(sql: "PRAGMA journal_mode").string } == "wal")
        return refusal
    }
}
