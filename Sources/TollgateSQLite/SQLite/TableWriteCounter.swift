import CSQLite
import Foundation

/// Counts the runs, on one connection, of statements that can write any of a few tables: a row
/// read from those tables and remembered stays true while the count has not moved.
///
/// SQLite says which tables a statement writes, its triggers' writes included, as it prepares
/// it: the connection's authorizer (`sqlite3_set_authorizer`) hears an `INSERT`, `UPDATE` or
/// `DELETE` of each table, and any `DROP TABLE` or `ALTER TABLE`. So no writer has to remember to
/// say that it wrote: a ``Statement`` prepared to write a watched table adds one each time it
/// steps, and any preparation that touches one (including a script's statements, and SQLite
/// preparing a statement again after a schema change) adds one as well. The count errs only
/// upwards: a statement that could write but changed no row still counts.
///
/// Not `Sendable`: it belongs to its ``Database`` and shares its confinement.
final class TableWriteCounter {
    /// The tables watched, by their names in the schema (compared without case, as SQLite does).
    let tables: [String]
    /// How many runs and preparations of statements that can write a watched table there were.
    private(set) var count: UInt64 = 0
    /// Whether the authorizer heard a write of a watched table since ``startPreparing()``.
    private(set) var preparedWrite = false

    /// - Parameter tables: The tables to watch.
    init(watching tables: [String]) {
        self.tables = tables
    }

    /// Called before a statement is prepared: ``preparedWrite`` then says whether it writes a watched table.
    func startPreparing() { preparedWrite = false }

    /// A statement that can write a watched table ran once more.
    func statementRan() { count &+= 1 }

    fileprivate func heardWrite(of table: UnsafePointer<CChar>) {
        for watched in tables where strcasecmp(table, watched) == 0 {
            preparedWrite = true
            count &+= 1
            return
        }
    }

    /// Makes `connection`'s authorizer report to this counter. The counter must outlive the
    /// connection's preparations: its ``Database`` owns both and removes the authorizer first.
    func install(on connection: OpaquePointer) {
        sqlite3_set_authorizer(connection, tableWriteAuthorizer, Unmanaged.passUnretained(self).toOpaque())
    }

    static func uninstall(from connection: OpaquePointer) {
        sqlite3_set_authorizer(connection, nil, nil)
    }
}

/// The authorizer: allows everything, and tells the counter of every table written.
private func tableWriteAuthorizer(
    _ context: UnsafeMutableRawPointer?, _ action: Int32, _ first: UnsafePointer<CChar>?,
    _ second: UnsafePointer<CChar>?, _ database: UnsafePointer<CChar>?, _ trigger: UnsafePointer<CChar>?
) -> Int32 {
    guard let context else { return SQLITE_OK }
    // For these actions the table is the first argument; for ALTER TABLE, the second.
    let table: UnsafePointer<CChar>? = switch action {
    case SQLITE_INSERT, SQLITE_UPDATE, SQLITE_DELETE, SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_TABLE: first
    case SQLITE_ALTER_TABLE: second
    default: nil
    }
    if let table { Unmanaged<TableWriteCounter>.fromOpaque(context).takeUnretainedValue().heardWrite(of: table) }
    return SQLITE_OK
}
