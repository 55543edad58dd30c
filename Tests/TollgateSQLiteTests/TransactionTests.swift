import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

private struct Abort: Error, Equatable {}

@Suite("Transactions, statements and errors")
struct TransactionTests {
    @Test("a write that throws rolls back everything it did and rethrows its own error")
    func rollbackOnThrow() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("rollback.sqlite"))
        await #expect(throws: Abort()) {
            try await store.write { db in
                try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (1, 'test', 'first')")
                try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (2, 'test', 'second')")
                throw Abort()
            }
        }
        let count = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM admin_events").int }
        #expect(count == 0)

        // The connection is usable afterwards: no transaction was left open.
        try await store.write { db in
            try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (3, 'test', 'third')")
        }
        let after = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM admin_events").int }
        #expect(after == 1)
    }

    @Test("a statement is prepared once and reused from the cache")
    func statementCacheIsReused() throws {
        let store = try SQLiteStore(location: .inMemory)
        try store.write { db in
            let sql = "INSERT INTO admin_events (at_ms, subject, action) VALUES (?, 'test', 'cached')"
            let first = try db.cachedStatement(sql: sql)
            let countBefore = db.cachedStatementCount
            for index in 0..<100 {
                try db.execute(sql: sql, arguments: [index])
            }
            #expect(try db.cachedStatement(sql: sql) === first)
            #expect(db.cachedStatementCount == countBefore)
            #expect(try db.fetchValue(sql: "SELECT COUNT(*) FROM admin_events").int == 100)
        }
    }

    @Test("a storage error carries SQLite's code, message and SQL, never the bound values")
    func errorsCarryNoBoundValues() throws {
        let store = try SQLiteStore(location: .inMemory)
        let secret = "AIzaSy-very-secret-api-key"
        let error = #expect(throws: DatabaseError.self) {
            try store.write { db in
                try db.execute(sql: "INSERT INTO quota_usage (pacific_date, bucket, endpoint) VALUES (?, 'no-such-bucket', ?)",
                               arguments: ["2026-11-21", secret])
            }
        }
        #expect(error?.extendedResultCode == 787) // SQLITE_CONSTRAINT_FOREIGNKEY
        #expect(error?.message.contains("FOREIGN KEY") == true)
        #expect(error?.sql?.contains("INSERT INTO quota_usage") == true)
        #expect(error.map { String(describing: $0) }?.contains(secret) == false)
    }

    @Test("reads run beside a write that holds the write lock")
    func readsBesideWrites() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("concurrent.sqlite"))
        try await store.write { db in
            try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (1, 'test', 'committed')")
        }
        let slowWrite = await OpenWriteTransaction(store) { db in
            try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (2, 'test', 'pending')")
        }
        // The writer connection is busy inside its transaction; the reader still answers, from the
        // last committed snapshot.
        let seen = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM admin_events").int }
        #expect(seen == 1)
        try await slowWrite.commit()
        let after = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM admin_events").int }
        #expect(after == 2)
    }

    @Test("the reader connection refuses writes")
    func readerIsReadOnly() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("readonly.sqlite"))
        #expect(throws: DatabaseError.self) {
            try store.read { db in
                try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (1, 'test', 'nope')")
            }
        }
    }

    @Test("blobs, text, integers, reals and NULL round-trip")
    func valuesRoundTrip() throws {
        let store = try SQLiteStore(location: .inMemory)
        let blob = Data((0...255).map { UInt8($0) })
        let row = try store.write { db in
            try db.fetchOne(sql: "SELECT ?, ?, ?, ?, ?, ?", arguments: [blob, Data(), "héllo ✓", 42, 2.5, nil])
        }
        #expect(row == Row([.blob(blob), .blob(Data()), "héllo ✓", 42, 2.5, .null]))
    }
}
