import Foundation
import Testing
import TollgateCore
import TollgateSQLite

/// The layer reads rows by column name and never turns a mismatch into a zero or an empty string.
@Suite("Rows decoded by column name")
struct RowDecodingTests {
    private func row(_ sql: String, arguments: StatementArguments = []) throws -> Row {
        let database = try Database(path: ":memory:")
        return try #require(try database.fetchOne(sql: sql, arguments: arguments))
    }

    @Test("a column is read by its name, whatever its position, and NULL reads as nil only for an optional")
    func byName() throws {
        let row = try row("SELECT 'e.list' AS endpoint, 7 AS units, NULL AS etag, x'00ff' AS body, 2.0 AS ratio")
        #expect(try row.decode(Int.self, forColumn: "units") == 7)
        #expect(try row.decode(String.self, forColumn: "endpoint") == "e.list")
        #expect(try row.decode(String?.self, forColumn: "etag") == nil)
        #expect(try row.decode(Data.self, forColumn: "body") == Data([0, 255]))
        #expect(try row.decode(Int.self, forColumn: "ratio") == 2, "a real without a fraction is an integer")
        #expect(try row.decode(Int.self, forColumn: "UNITS") == 7, "names match regardless of case, as SQLite's")
        #expect(row.columnNames == ["endpoint", "units", "etag", "body", "ratio"])
    }

    @Test("a missing, NULL or mistyped column throws naming the column, never showing the value")
    func mismatchesThrow() throws {
        let row = try row("SELECT ? AS holder, 1.5 AS units, NULL AS calls, 42 AS endpoint", arguments: ["secret-token"])
        let missing = #expect(throws: RowDecodingError.self) { try row.decode(Int.self, forColumn: "hit_count") }
        #expect(missing?.column == "hit_count")
        #expect(missing?.problem == .missingColumn(available: ["holder", "units", "calls", "endpoint"]))
        let truncated = #expect(throws: RowDecodingError.self) { try row.decode(Int.self, forColumn: "units") }
        #expect(truncated?.problem == .mismatch(expected: "Int", found: "real"))
        let null = #expect(throws: RowDecodingError.self) { try row.decode(Int64.self, forColumn: "calls") }
        #expect(null?.problem == .unexpectedNull(expected: "Int64"))
        let stringified = #expect(throws: RowDecodingError.self) { try row.decode(String.self, forColumn: "endpoint") }
        #expect(stringified?.problem == .mismatch(expected: "String", found: "integer"))
        let wrongKind = #expect(throws: RowDecodingError.self) { try row.decode(Int.self, forColumn: "holder") }
        #expect(wrongKind?.description.contains("holder") == true)
        #expect(wrongKind?.description.contains("secret-token") == false, "the value never reaches the message")
    }

    @Test("DatabaseValue's conversions never truncate a real or turn a number into text")
    func conversionsAreExact() {
        #expect(DatabaseValue.real(3.5).int64 == nil)
        #expect(DatabaseValue.real(3).int64 == 3)
        #expect(DatabaseValue.integer(7).string == nil)
        #expect(DatabaseValue.text("7").int == nil)
        #expect(DatabaseValue.null.int == nil)
        #expect(Int.fromDatabaseValue(.integer(Int64.max)) == Int(Int64.max))
        #expect(Optional<Int>.fromDatabaseValue(.null) == .some(nil))
        #expect(Optional<Int>.fromDatabaseValue(.text("x")) == nil)
    }

    @Test("a record whose table lost a column throws naming it instead of reading zero")
    func recordWithMissingColumn() throws {
        let database = try Database(path: ":memory:")
        try database.execute(sql: "CREATE TABLE circuits (endpoint TEXT, state TEXT, consecutive_failures INTEGER)")
        try database.execute(sql: "INSERT INTO circuits VALUES (?, ?, ?)", arguments: ["/a", "open", 3])
        let error = #expect(throws: RowDecodingError.self) {
            try CircuitRecord.fetchAll(database, sql: "SELECT * FROM circuits")
        }
        #expect(error?.column == "consecutive_rate_limits")
    }

    @Test("arguments are plain Swift values, nil binds NULL, and statements are cached only when asked by name")
    func argumentsAndCaching() throws {
        let database = try Database(path: ":memory:")
        try database.execute(sql: "CREATE TABLE t (a TEXT, b INTEGER, c BLOB, d REAL, e INTEGER)")
        let optional: Int64? = nil
        try database.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
                             arguments: ["x\u{0}y", 9, Data([1, 2]), 0.25, optional])
        #expect(database.cachedStatementCount == 0, "execute(sql:) keeps nothing")
        let row = try #require(try database.cachedStatement(sql: "SELECT a, b, c, d, e FROM t WHERE b = ?")
            .fetchOne(arguments: [9]))
        #expect(database.cachedStatementCount == 1)
        #expect(row.values == [.text("x\u{0}y"), .integer(9), .blob(Data([1, 2])), .real(0.25), .null])
        _ = try database.fetchAll(sql: "SELECT a FROM t WHERE b = \(9)")
        #expect(database.cachedStatementCount == 1, "interpolated SQL never grows the cache")
    }
}
