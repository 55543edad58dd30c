import TollgateCore

/// A type read from a row by column name, in one throwing initialiser, as GRDB's protocol of the
/// same name.
///
/// ```swift
/// extension CircuitRecord: FetchableRecord {
///     public init(row: Row) throws {
///         self.init(endpoint: try row.decode(String.self, forColumn: "endpoint"), …)
///     }
/// }
/// let all = try CircuitRecord.fetchAll(db, sql: "SELECT * FROM circuits")
/// ```
public protocol FetchableRecord {
    /// Reads the record from a row by its columns' names.
    /// - Parameter row: A row holding at least the columns the record reads.
    /// - Throws: ``RowDecodingError`` naming the first column that is missing or does not convert.
    init(row: Row) throws
}

extension FetchableRecord {
    /// Runs a query, without caching its statement, and reads every row as a record.
    /// - Parameters:
    ///   - db: The connection.
    ///   - sql: One query with `?` placeholders.
    ///   - arguments: One value per placeholder.
    /// - Returns: The records, in the query's order.
    /// - Throws: ``DatabaseError`` when SQLite fails, ``RowDecodingError`` when a row does not read.
    public static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try fetchAll(db.makeStatement(sql: sql), arguments: arguments)
    }

    /// Runs a query, without caching its statement, and reads its first row as a record.
    /// - Parameters:
    ///   - db: The connection.
    ///   - sql: One query with `?` placeholders.
    ///   - arguments: One value per placeholder.
    /// - Returns: The record, or nil when there is no row.
    /// - Throws: ``DatabaseError`` when SQLite fails, ``RowDecodingError`` when the row does not read.
    public static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try fetchOne(db.makeStatement(sql: sql), arguments: arguments)
    }

    /// Runs a prepared statement (a cached one, on a hot path) and reads every row as a record.
    /// - Parameters:
    ///   - statement: The statement.
    ///   - arguments: One value per placeholder.
    /// - Returns: The records, in the query's order.
    /// - Throws: ``DatabaseError`` when SQLite fails, ``RowDecodingError`` when a row does not read.
    public static func fetchAll(_ statement: Statement, arguments: StatementArguments = []) throws -> [Self] {
        try statement.fetchAll(arguments: arguments).map { try Self(row: $0) }
    }

    /// Runs a prepared statement (a cached one, on a hot path) and reads its first row as a record.
    /// - Parameters:
    ///   - statement: The statement.
    ///   - arguments: One value per placeholder.
    /// - Returns: The record, or nil when there is no row.
    /// - Throws: ``DatabaseError`` when SQLite fails, ``RowDecodingError`` when the row does not read.
    public static func fetchOne(_ statement: Statement, arguments: StatementArguments = []) throws -> Self? {
        try statement.fetchOne(arguments: arguments).map { try Self(row: $0) }
    }
}
