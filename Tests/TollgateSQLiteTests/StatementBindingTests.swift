import Foundation
import Testing
import TollgateTestSupport
@testable import TollgateSQLite

/// The admission's statements bind their values one by one instead of through
/// `StatementArguments`: both ways must store the same row, and a wrong count must still refuse.
@Suite("Values bound one by one")
struct StatementBindingTests {
    private static let insert = "INSERT INTO values_bound (id, number, text, missing, body, real) VALUES (?, ?, ?, ?, ?, ?)"

    private static func database(in directory: TemporaryDirectory) throws -> Database {
        let database = try Database(path: directory.path("binding.sqlite"))
        try database.execute(sql: "CREATE TABLE values_bound (id INTEGER PRIMARY KEY, number, text, missing, body, real)")
        return database
    }

    @Test("one by one stores what the arguments' array stores: integers, text with a NUL, NULL, an empty blob, a real")
    func sameRowAsArguments() throws {
        let directory = try TemporaryDirectory()
        let database = try Self.database(in: directory)
        let text = "videos.list\u{0}after the NUL"
        let missing: String? = nil
        try database.cachedStatement(sql: Self.insert).execute(Int64(1), Int.max, text, missing, Data(), 2.5)
        try database.cachedStatement(sql: Self.insert)
            .execute(arguments: [Int64(2), Int.max, text, missing, Data(), 2.5])
        let rows = try database.fetchAll(sql: """
            SELECT number, text, missing, typeof(missing) AS missingType, body, typeof(body) AS bodyType, real
            FROM values_bound ORDER BY id
            """)
        #expect(rows.count == 2)
        for row in rows {
            #expect(try row.decode(Int.self, forColumn: "number") == Int.max)
            #expect(try row.decode(String.self, forColumn: "text") == text, "the text is bound whole, past its NUL")
            #expect(try row.decode(String.self, forColumn: "missingType") == "null")
            #expect(try row.decode(String.self, forColumn: "bodyType") == "blob", "an empty blob stays a blob")
            #expect(try row.decode(Double.self, forColumn: "real") == 2.5)
        }
    }

    @Test("a count that does not match the placeholders throws SQLITE_RANGE and writes nothing")
    func wrongCountRefused() throws {
        let directory = try TemporaryDirectory()
        let database = try Self.database(in: directory)
        let error = #expect(throws: DatabaseError.self) {
            try database.cachedStatement(sql: Self.insert).execute(Int64(1), 2, "three")
        }
        #expect(error?.resultCode == 25, "SQLITE_RANGE")
        #expect(error?.message.contains("expected 6 arguments, got 3") == true)
        #expect(try database.fetchValue(sql: "SELECT COUNT(*) FROM values_bound").int == 0)
    }
}
