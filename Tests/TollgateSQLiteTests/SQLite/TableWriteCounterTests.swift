import Testing
import TollgateTestSupport
@testable import TollgateSQLite

/// The count a remembered quota bucket stands on: it must move for every statement that can write
/// `quota_buckets` or `quota_usage`, however it does, and for nothing else.
@Suite("Writes to the bucket's tables, counted")
struct TableWriteCounterTests {
    func database(_ directory: TemporaryDirectory) throws -> Database {
        let db = try Database(path: directory.path("counted.sqlite"))
        try db.executeScript("""
            CREATE TABLE quota_usage (bucket TEXT PRIMARY KEY, units INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE quota_buckets (bucket TEXT PRIMARY KEY, daily_limit INTEGER NOT NULL);
            CREATE TABLE cache_leases (resource_key TEXT PRIMARY KEY, holder TEXT NOT NULL);
            CREATE TABLE audit (note TEXT NOT NULL);
            INSERT INTO quota_usage VALUES ('youtube', 0);
            """)
        return db
    }

    @Test("each run of a statement that writes a watched table counts; reads and other tables do not")
    func runsOfWritesCount() throws {
        let directory = try TemporaryDirectory()
        let db = try database(directory)
        let charge = try db.cachedStatement(sql: "UPDATE quota_usage SET units = units + ? WHERE bucket = ?")
        let read = try db.cachedStatement(sql: "SELECT units FROM quota_usage WHERE bucket = ?")
        let lease = try db.cachedStatement(sql: "INSERT OR REPLACE INTO cache_leases VALUES (?, ?)")
        let counted = db.quotaBucketWrites.count
        for units in 1...3 {
            try charge.execute(arguments: [units, "youtube"])
            _ = try read.fetchValue(arguments: ["youtube"])
            try lease.execute(arguments: ["key", "holder"])
        }
        #expect(db.quotaBucketWrites.count == counted + 3)
        // A statement that could write but changed nothing still counts: the count errs upwards only.
        try charge.execute(arguments: [1, "no such bucket"])
        #expect(db.quotaBucketWrites.count == counted + 4)
        #expect(try read.fetchValue(arguments: ["youtube"]).int == 6)
    }

    @Test("writes through a trigger of another table, a script and a DELETE without WHERE all count")
    func everyWayOfWritingCounts() throws {
        let directory = try TemporaryDirectory()
        let db = try database(directory)
        try db.executeScript("""
            CREATE TRIGGER audit_charges AFTER INSERT ON audit BEGIN
                UPDATE quota_usage SET units = units + 1;
            END
            """)
        let note = try db.cachedStatement(sql: "INSERT INTO audit VALUES (?)")
        var counted = db.quotaBucketWrites.count
        try note.execute(arguments: ["first"])
        #expect(db.quotaBucketWrites.count > counted, "the trigger's UPDATE is the INSERT's")
        counted = db.quotaBucketWrites.count
        try db.executeScript("UPDATE quota_buckets SET daily_limit = 5")
        #expect(db.quotaBucketWrites.count > counted, "a script's statement")
        counted = db.quotaBucketWrites.count
        // SQLite empties a table without visiting its rows (the truncate optimisation), which its
        // update hook would not see; the authorizer does, as the statement is prepared.
        try db.execute(sql: "DELETE FROM quota_usage")
        #expect(db.quotaBucketWrites.count > counted, "a DELETE of every row")
        counted = db.quotaBucketWrites.count
        try db.execute(sql: "DELETE FROM audit")
        try db.executeScript("DROP TRIGGER audit_charges")
        counted = db.quotaBucketWrites.count
        try db.execute(sql: "INSERT INTO audit VALUES (?)", arguments: ["second"])
        #expect(db.quotaBucketWrites.count == counted, "no watched table written")
        // The cached statement, prepared while the trigger stood, still counts: upwards only.
        try note.execute(arguments: ["third"])
        #expect(db.quotaBucketWrites.count > counted)
    }

    @Test("a cached statement prepared again after a schema change is counted by what it writes now")
    func repreparedStatementCounts() throws {
        let directory = try TemporaryDirectory()
        let db = try database(directory)
        let note = try db.cachedStatement(sql: "INSERT INTO audit VALUES (?)")
        try note.execute(arguments: ["before"])
        let counted = db.quotaBucketWrites.count
        // Another connection (an operator in the sqlite3 shell) adds a trigger: the cached
        // statement, prepared when it wrote nothing watched, now writes the usage.
        let shell = try Database(path: directory.path("counted.sqlite"))
        try shell.executeScript("""
            CREATE TRIGGER audit_charges AFTER INSERT ON audit BEGIN
                UPDATE quota_usage SET units = units + 1;
            END
            """)
        try note.execute(arguments: ["after"])
        #expect(db.quotaBucketWrites.count > counted)
        // And every run after that one, not only the step that prepared it again.
        let afterPreparation = db.quotaBucketWrites.count
        try note.execute(arguments: ["again"])
        #expect(db.quotaBucketWrites.count > afterPreparation)
        #expect(try db.fetchValue(sql: "SELECT units FROM quota_usage").int == 2)
    }
}
