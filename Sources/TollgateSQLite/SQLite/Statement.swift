import CSQLite
import Foundation
import TollgateCore

/// A prepared SQLite statement, finalised when it is released.
///
/// Statements belong to the ``Database`` that prepared them and share its confinement: they are
/// not `Sendable`. ``Database/cachedStatement(sql:)`` keeps one per SQL text for reuse, on the
/// paths that ask for it; ``Database/makeStatement(sql:)`` prepares one that is finalised when released.
public final class Statement {
    /// The SQL text the statement was prepared from.
    public let sql: String
    let handle: OpaquePointer
    private let connection: OpaquePointer
    /// The connection's suspension, checked before each step.
    private let suspension: DatabaseSuspension
    /// Whether the statement ends a transaction (`COMMIT`, `ROLLBACK`): allowed while suspended,
    /// since it releases the lock.
    private let releasesLock: Bool
    /// The columns' names, read once on the first row.
    private var columns: RowColumns?
    /// The connection's count of writes to the tables it watches, and whether this statement is one:
    /// set when it is prepared, and again if SQLite prepares it anew (after a schema change, inside a
    /// step) and it now writes one, through a trigger added since, say.
    private let writeCounter: TableWriteCounter
    private var writesWatchedTable: Bool

    init(connection: OpaquePointer, sql: String, suspension: DatabaseSuspension,
         writeCounter: TableWriteCounter) throws(DatabaseError) {
        var handle: OpaquePointer?
        writeCounter.startPreparing()
        let code = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard code == SQLITE_OK, let handle else {
            throw DatabaseError(connection: connection, resultCode: code, sql: sql)
        }
        self.sql = sql
        self.handle = handle
        self.connection = connection
        self.suspension = suspension
        self.writeCounter = writeCounter
        self.writesWatchedTable = writeCounter.preparedWrite
        let opening = sql.prefix(9).uppercased()
        self.releasesLock = opening.hasPrefix("COMMIT") || opening.hasPrefix("ROLLBACK") || opening.hasPrefix("END")
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Resets the statement and binds `arguments` to its parameters, in order.
    /// - Parameter arguments: One value per `?` placeholder.
    /// - Throws: ``DatabaseError`` when the count does not match or SQLite refuses a value.
    public func bind(arguments: StatementArguments) throws(DatabaseError) {
        let arguments = arguments.values
        try resetForBinding(count: arguments.count)
        for (offset, value) in arguments.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Resets the statement and binds `values` to its parameters, in order: ``bind(arguments:)``
    /// without building ``StatementArguments``, an array of boxed values converted into a second
    /// array. For the few short statements every admission runs, where that showed: 0.8 µs less
    /// per admission of three such statements. Not for long ones: a store's seventeen values,
    /// half of them optional, bound this way were 2 µs slower than through the arrays.
    /// - Parameter values: One value per `?` placeholder; `nil` binds NULL.
    /// - Throws: ``DatabaseError`` when the count does not match or SQLite refuses a value.
    func bind<each Value: DatabaseValueConvertible>(_ values: repeat each Value) throws(DatabaseError) {
        var count = 0
        for _ in repeat each values { count += 1 }
        try resetForBinding(count: count)
        var index: Int32 = 0
        for value in repeat each values {
            index += 1
            try bind(value.databaseValue, at: index)
        }
    }

    /// Resets the statement and clears its values before `count` new ones are bound.
    /// - Throws: ``DatabaseError`` (`SQLITE_RANGE`) when the statement has another number of placeholders.
    private func resetForBinding(count: Int) throws(DatabaseError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard count == expected else {
            throw DatabaseError(
                extendedResultCode: SQLITE_RANGE, message: "expected \(expected) arguments, got \(count)", sql: sql
            )
        }
    }

    private func bind(_ value: DatabaseValue, at index: Int32) throws(DatabaseError) {
        let code: Int32
        switch value {
        case .null:
            code = sqlite3_bind_null(handle, index)
        case .integer(let integer):
            code = sqlite3_bind_int64(handle, index, integer)
        case .real(let real):
            code = sqlite3_bind_double(handle, index, real)
        case .text(let text):
            // Bound with its byte length, not up to the first NUL: text that holds a NUL (an
            // endpoint name from hostile input, say) is stored whole, never cut short.
            var text = text
            code = text.withUTF8 { bytes in
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_text(handle, index, "", 0, _tollgate_sqlite_transient())
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { characters in
                    sqlite3_bind_text64(handle, index, characters, sqlite3_uint64(bytes.count),
                                        _tollgate_sqlite_transient(), UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let data):
            code = data.withUnsafeBytes { bytes in
                // A zero-length blob must stay a blob, not become NULL.
                sqlite3_bind_blob64(handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                    sqlite3_uint64(bytes.count), _tollgate_sqlite_transient())
            }
        }
        guard code == SQLITE_OK else {
            throw DatabaseError(connection: connection, resultCode: code, sql: sql)
        }
    }

    /// Runs the statement to completion, ignoring any rows it returns.
    /// - Parameter arguments: One value per `?` placeholder.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func execute(arguments: StatementArguments = []) throws(DatabaseError) {
        try bind(arguments: arguments)
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// ``execute(arguments:)`` with the values bound one by one (see ``bind(_:)``).
    /// - Parameter values: One value per `?` placeholder; `nil` binds NULL.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    func execute<each Value: DatabaseValueConvertible>(_ values: repeat each Value) throws(DatabaseError) {
        try bind(repeat each values)
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Runs the statement and returns every row.
    /// - Parameter arguments: One value per `?` placeholder.
    /// - Returns: The rows in the order SQLite produced them.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func fetchAll(arguments: StatementArguments = []) throws(DatabaseError) -> [Row] {
        try bind(arguments: arguments)
        defer { sqlite3_reset(handle) }
        var rows: [Row] = []
        while try step() {
            rows.append(currentRow())
        }
        return rows
    }

    /// Runs the statement and returns its first row, or nil when there is none.
    /// - Parameter arguments: One value per `?` placeholder.
    /// - Returns: The first row.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func fetchOne(arguments: StatementArguments = []) throws(DatabaseError) -> Row? {
        try bind(arguments: arguments)
        defer { sqlite3_reset(handle) }
        return try step() ? currentRow() : nil
    }

    /// Runs the statement and returns the first column of its first row.
    /// - Parameter arguments: One value per `?` placeholder.
    /// - Returns: The value, or `.null` when there is no row.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func fetchValue(arguments: StatementArguments = []) throws(DatabaseError) -> DatabaseValue {
        try fetchOne(arguments: arguments)?[0] ?? .null
    }

    /// Runs a statement without arguments and returns the integer in the first column of its first
    /// row, without building a ``Row``: for counters read on a hot path.
    /// - Returns: The integer, or nil when there is no row or the value is NULL.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func fetchInt64() throws(DatabaseError) -> Int64? {
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        guard try step(), sqlite3_column_type(handle, 0) != SQLITE_NULL else { return nil }
        return sqlite3_column_int64(handle, 0)
    }

    /// Runs the statement and calls `body` with each row, without collecting them.
    /// - Parameters:
    ///   - arguments: One value per `?` placeholder.
    ///   - body: Called once per row, in order.
    /// - Throws: ``DatabaseError`` when SQLite fails, or what `body` throws.
    public func forEachRow(arguments: StatementArguments = [], _ body: (Row) throws -> Void) throws {
        try bind(arguments: arguments)
        defer { sqlite3_reset(handle) }
        while try step() {
            try body(currentRow())
        }
    }

    /// Advances one row: true when a row is ready, false when the statement is done.
    private func step() throws(DatabaseError) -> Bool {
        if !releasesLock, suspension.isSuspended {
            // No lock may be taken while the store is suspended: the statement does not run, and
            // the transaction around it rolls back (a ROLLBACK is always allowed).
            throw DatabaseError.suspended(sql: sql)
        }
        if writesWatchedTable { writeCounter.statementRan() }
        let countBefore = writeCounter.count
        let code = sqlite3_step(handle)
        // Only a preparation inside the step moves the count: SQLite prepared this statement again
        // and heard it write a watched table, so every later run counts too.
        if !writesWatchedTable, writeCounter.count != countBefore { writesWatchedTable = true }
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw DatabaseError(connection: connection, resultCode: code, sql: sql)
        }
    }

    private func currentRow() -> Row {
        let count = sqlite3_column_count(handle)
        var values: [DatabaseValue] = []
        values.reserveCapacity(Int(count))
        for column in 0..<count {
            values.append(columnValue(column))
        }
        return Row(values: values, columns: columnNames(count), sql: sql)
    }

    private func columnNames(_ count: Int32) -> RowColumns {
        if let columns { return columns }
        let names = (0..<count).map { column in sqlite3_column_name(handle, column).map { String(cString: $0) } ?? "" }
        let columns = RowColumns(names)
        self.columns = columns
        return columns
    }

    private func columnValue(_ column: Int32) -> DatabaseValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, column))
        case SQLITE_TEXT:
            // Read by its byte length (asked after the text, as SQLite requires), so a NUL inside
            // the text does not end it.
            guard let text = sqlite3_column_text(handle, column) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, column))
            guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default:
            return .null
        }
    }
}
