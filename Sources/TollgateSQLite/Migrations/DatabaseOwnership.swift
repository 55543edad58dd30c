import TollgateCore

/// Whether an SQLite database is Tollgate's: the one answer to "is this ours?", asked before a
/// store writes anything and before `tollgate demo --replace` deletes anything.
///
/// Tollgate marks its files as SQLite intends, with `PRAGMA application_id` (the four bytes at
/// offset 68 of the header): set in the transaction of every migration, and once on files that an
/// earlier release made without it.
enum DatabaseOwnership: Sendable, Equatable {
    /// Marked as Tollgate's.
    case tollgate
    /// No table, view, index or trigger: a new database, which becomes Tollgate's.
    case empty
    /// Unmarked, but with Tollgate's migration history: made by a release before the mark.
    case unmarkedTollgate
    /// Another application's, for the reason given.
    case foreign(reason: String)

    /// Tollgate's application ID, "TLGT" in ASCII.
    static let applicationID: Int32 = 0x544C_4754

    /// Tells whose database `db` is, by reads alone.
    /// - Parameters:
    ///   - db: A connection to the file.
    ///   - firstMigration: The first migration of the library opening it, whose row an unmarked
    ///     Tollgate file's history starts with.
    /// - Throws: ``DatabaseError`` when SQLite cannot read the file.
    static func of(_ db: Database, firstMigration: Migration?) throws -> DatabaseOwnership {
        let applicationID = try db.fetchValue(sql: "PRAGMA application_id").int64 ?? 0
        if applicationID == Int64(Self.applicationID) { return .tollgate }
        if applicationID != 0 {
            return .foreign(reason: "its application ID is 0x\(String(UInt32(truncatingIfNeeded: applicationID), radix: 16))")
        }
        let objects = try db.fetchValue(
            sql: "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        ).int64 ?? 0
        if objects == 0 { return .empty }
        if let firstMigration, try hasTollgateHistory(db, startingWith: firstMigration) { return .unmarkedTollgate }
        return .foreign(reason: "it holds \(objects) tables, indexes or views and no Tollgate migration history")
    }

    /// Refuses another application's database, before anything is written to it.
    /// - Throws: ``StoreError/notTollgate(path:reason:)``, or ``DatabaseError`` when SQLite cannot read it.
    static func requireTollgate(_ db: Database, path: String, firstMigration: Migration?) throws {
        if case .foreign(let reason) = try of(db, firstMigration: firstMigration) {
            throw StoreError.notTollgate(path: path, reason: reason)
        }
    }

    /// Marks the database as Tollgate's, inside the caller's write transaction.
    static func mark(_ db: Database) throws {
        // PRAGMA arguments cannot be bound; the constant is safe to interpolate.
        try db.execute(sql: "PRAGMA application_id = \(applicationID)")
    }

    /// Whether `schema_migrations` is Tollgate's (its four columns) and starts with `first`. A table
    /// of that name with other columns (Rails keeps one) is another application's.
    private static func hasTollgateHistory(_ db: Database, startingWith first: Migration) throws -> Bool {
        let columns = try db.fetchAll(sql: "SELECT name FROM pragma_table_info('schema_migrations')")
            .map { try $0.decode(String.self, forColumn: "name") }
        guard Set(columns) == ["version", "name", "checksum", "applied_at"] else { return false }
        return try db.fetchOne(
            sql: "SELECT 1 FROM schema_migrations WHERE version = ? AND name = ?", arguments: [first.version, first.name]
        ) != nil
    }
}
