import Foundation
import Testing
import TollgateTestSupport
@testable import TollgateSQLite

/// The VFS that writes a transaction's log frames in one call (CSQLiteBatchedWAL): fewer system calls,
/// and nothing another process reads any different.
@Suite("The write-ahead log written a transaction at a time")
struct BatchedWALTests {
    @Test("a transaction's frames reach the log in one write, and another process reads each commit as soon as it returns")
    func oneWritePerCommit() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("batched.sqlite")
        let database = try Self.openInWAL(path)
        try database.execute(sql: "CREATE TABLE bodies (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")

        for round in 1...5 {
            let before = try #require(database.logWrites)
            try database.inTransaction {
                // Four rows of 3,000 bytes: a page or more each, so the commit carries several frames.
                for _ in 0..<4 {
                    try database.execute(sql: "INSERT INTO bodies (body) VALUES (randomblob(3000))")
                }
            }
            let after = try #require(database.logWrites)
            #expect(after.received - before.received >= 8, "SQLite wrote \(after.received - before.received) times: fewer than four frames")
            #expect(after.issued - before.issued == 1, "round \(round): \(after.issued - before.issued) writes reached the file")
            // The log alone, checked frame by frame, holds every commit (what a crash leaves).
            #expect(try Self.recovered(path, in: directory, "SELECT count(*) FROM bodies;") == "\(round * 4)")
            // The sqlite3 shell opens the file with SQLite's own VFS, in another process: it can only
            // see the rows if the frames were in the file when the commit was published. (As the last
            // connection to close it may move the log into the database and delete it.)
            #expect(try Self.shell(path, "SELECT count(*), sum(length(body)) FROM bodies;") == "\(round * 4)|\(round * 12000)")
        }
        #expect(try Self.shell(path, "PRAGMA integrity_check;") == "ok")
    }

    @Test("a transaction past the held limit, one that spills pages before its commit and one rolled back after spilling leave the file whole")
    func largeAndRolledBackTransactions() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("spills.sqlite")
        let database = try Self.openSpilling(path)

        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try database.inTransaction {
                for _ in 0..<300 { try database.execute(sql: "INSERT INTO bodies (body) VALUES (randomblob(4000))") }
                throw Abandon()
            }
        }
        #expect(try Self.shell(path, "SELECT count(*) FROM bodies;") == "0")

        // About 2.4 MiB in one transaction: many times what the VFS holds (128 KiB), written out on the way.
        try database.inTransaction {
            for _ in 0..<600 { try database.execute(sql: "INSERT INTO bodies (body) VALUES (randomblob(4000))") }
        }
        try database.inTransaction {
            try database.execute(sql: "UPDATE bodies SET body = zeroblob(100) WHERE id % 2 = 0")
        }
        #expect(try Self.recovered(path, in: directory, "SELECT count(*), sum(length(body)) FROM bodies;") == "600|\(300 * 4000 + 300 * 100)")
        #expect(try Self.shell(path, "SELECT count(*), sum(length(body)) FROM bodies;") == "600|\(300 * 4000 + 300 * 100)")
        #expect(try Self.shell(path, "PRAGMA integrity_check;") == "ok")
        #expect(try database.fetchValue(sql: "SELECT count(*) FROM bodies").int == 600)
    }

    @Test("a transaction that changes pages it already spilled rewrites their frames and checksums in the file before its commit returns: the log alone recovers it")
    func rewrittenFramesReachTheFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("rewrites.sqlite")
        let database = try Self.openSpilling(path)
        try database.inTransaction {
            for _ in 0..<200 { try database.execute(sql: "INSERT INTO bodies (body) VALUES (randomblob(2000))") }
            // Pages spilled to the log above change again: SQLite overwrites their frames in place,
            // then rewrites every checksum from the first overwritten frame on, after the commit frame.
            try database.execute(sql: "UPDATE bodies SET body = zeroblob(2000) WHERE id <= 20")
        }
        #expect(try Self.recovered(path, in: directory, "SELECT count(*), sum(body = zeroblob(2000)) FROM bodies;") == "200|20")
        #expect(try database.fetchValue(sql: "SELECT count(*) FROM bodies").int == 200)
    }

    @Test("frames spilled by a transaction that rolls back are never written after another writer commits at the same offsets")
    func rolledBackFramesStayOut() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("rollback.sqlite")
        let database = try Self.openSpilling(path)
        try database.execute(sql: "INSERT INTO bodies (body) VALUES (randomblob(100))")
        _ = try database.fetchValue(sql: "PRAGMA wal_checkpoint(TRUNCATE)")

        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try database.inTransaction {
                // More pages than the cache holds: some reach the log (and the VFS) before the rollback.
                for _ in 0..<25 { try database.execute(sql: "INSERT INTO bodies (body) VALUES (randomblob(4000))") }
                throw Abandon()
            }
        }
        // Another process commits frames where the abandoned ones would have gone.
        #expect(try Self.shell(path, "PRAGMA synchronous = NORMAL; INSERT INTO bodies (body) SELECT randomblob(4000) FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5); SELECT count(*) FROM bodies;") == "6")
        // This connection's next reads and its close would have written the abandoned frames over them.
        #expect(try database.fetchValue(sql: "SELECT count(*) FROM bodies").int == 6)
        try database.execute(sql: "INSERT INTO bodies (body) VALUES (randomblob(100))")
        #expect(try Self.recovered(path, in: directory, "SELECT count(*) FROM bodies;") == "7")
        #expect(try Self.shell(path, "PRAGMA integrity_check; SELECT count(*) FROM bodies;") == "ok\n7")
    }

    @Test("in exclusive locking mode the log is written through, so a transaction that leaves that mode and rolls back leaves nothing to be written later")
    func exclusiveModeHoldsNothing() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("exclusive.sqlite")
        let database = try Self.openSpilling(path)
        try database.execute(sql: "INSERT INTO bodies (body) VALUES (randomblob(100))")
        _ = try database.fetchValue(sql: "PRAGMA wal_checkpoint(TRUNCATE)")

        // Exclusive mode takes no WAL-index locks, so no release of the write lock would drop what is held.
        _ = try database.fetchValue(sql: "PRAGMA locking_mode = EXCLUSIVE")
        try database.execute(sql: "BEGIN IMMEDIATE")
        for _ in 0..<25 { try database.execute(sql: "INSERT INTO bodies (body) VALUES (randomblob(4000))") }
        _ = try database.fetchValue(sql: "PRAGMA locking_mode = NORMAL")
        try database.execute(sql: "ROLLBACK")

        #expect(try Self.shell(path, "PRAGMA synchronous = NORMAL; INSERT INTO bodies (body) SELECT randomblob(3000) FROM bodies; INSERT INTO bodies (body) SELECT randomblob(3000) FROM bodies; SELECT count(*) FROM bodies;") == "4")
        #expect(try database.fetchValue(sql: "SELECT count(*) FROM bodies").int == 4)
        #expect(try Self.recovered(path, in: directory, "SELECT count(*) FROM bodies;") == "4")
        #expect(try Self.shell(path, "PRAGMA integrity_check;") == "ok")
    }

    @Test("a write-out that fails fails the transaction's commit, the file stays whole, and the next transaction commits")
    func failedWriteOutFailsTheCommit() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("full.sqlite")
        let database = try Self.openSpilling(path, columns: "rank INTEGER UNIQUE")
        _ = try database.fetchValue(sql: "PRAGMA wal_checkpoint(TRUNCATE)")

        try database.execute(sql: "BEGIN IMMEDIATE")
        for rank in 1...25 {
            try database.execute(sql: "INSERT INTO bodies (body, rank) VALUES (randomblob(4000), ?)", arguments: [rank])
        }
        // The spilled frames are held; reading them back writes them out first, and that fails. SQLite
        // fails only the statement (a read error does not end the transaction), so the commit must fail.
        #expect(database.failNextLogWriteOut(with: 13))  // SQLITE_FULL
        #expect(throws: DatabaseError.self) {
            try database.execute(sql: "UPDATE bodies SET rank = rank + 1000 WHERE id <= 25")
        }
        try? database.execute(sql: "INSERT INTO bodies (body, rank) VALUES (randomblob(10), -1)")
        #expect(throws: DatabaseError.self) { try database.execute(sql: "COMMIT") }
        try? database.execute(sql: "ROLLBACK")

        #expect(try Self.shell(path, "PRAGMA integrity_check; SELECT count(*) FROM bodies;") == "ok\n0")
        #expect(try Self.recovered(path, in: directory, "SELECT count(*) FROM bodies;") == "0")
        try database.inTransaction {
            try database.execute(sql: "INSERT INTO bodies (body, rank) VALUES (randomblob(4000), 1)")
        }
        #expect(try Self.shell(path, "SELECT count(*) FROM bodies;") == "1")
    }

    @Test("every store connection opens through the batching VFS")
    func storesUseIt() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("store.sqlite"))
        let batched = try store.write { db in
            try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (0, 'test', 'batched')")
            return db.logWrites != nil
        }
        #expect(batched)
    }

    /// ``openInWAL(_:)`` with a page cache of ten pages, so that SQLite writes changed pages to the
    /// log before a transaction commits (a spill), and a `bodies` table with `columns` besides the body.
    private static func openSpilling(_ path: String, columns: String? = nil) throws -> Database {
        let database = try openInWAL(path)
        try database.execute(sql: "PRAGMA cache_size = 10")
        let extra = columns.map { ", \($0)" } ?? ""
        try database.execute(sql: "CREATE TABLE bodies (id INTEGER PRIMARY KEY, body BLOB NOT NULL\(extra))")
        return database
    }

    /// A connection set as the store sets its writer: WAL, and `synchronous = NORMAL`, under which a
    /// commit does not sync the log (a sync would write out what is held by itself).
    private static func openInWAL(_ path: String) throws -> Database {
        let database = try Database(path: path)
        #expect(try database.fetchValue(sql: "PRAGMA journal_mode = WAL").string == "wal")
        try database.execute(sql: "PRAGMA synchronous = NORMAL")
        return database
    }

    /// What the `sqlite3` shell prints for `sql`, then for `PRAGMA integrity_check`, on a copy of the
    /// database and its log made now, without the WAL index: the shell must recover the log from the
    /// file alone, checking every frame's checksum, as after a crash. The writer may still be open.
    private static func recovered(_ path: String, in directory: TemporaryDirectory, _ sql: String) throws -> String {
        let copy = directory.path("recovered-\(UUID().uuidString).sqlite")
        // Copied by another process: a descriptor of this process closed on the database would
        // release every POSIX lock the process holds on it, the open connection's included.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sh", "-c", "cp \"$0\" \"$1\" && cp \"$0-wal\" \"$1-wal\"", path, copy]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return "the copy failed" }
        let integrity = try shell(copy, "PRAGMA integrity_check;")
        return integrity == "ok" ? try shell(copy, sql) : "integrity_check: \(integrity)"
    }

    /// What the `sqlite3` shell prints for `sql` on the file, trimmed.
    private static func shell(_ path: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sqlite3", path, sql]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
