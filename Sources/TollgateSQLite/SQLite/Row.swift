import TollgateCore

/// One row of a query's result: its values in column order, and the names of its columns.
///
/// Records read their columns by name, in one throwing initialiser each (``FetchableRecord``), as
/// GRDB's do: a column that is missing, NULL where a value is required, or of another kind throws a
/// ``RowDecodingError`` that names it, instead of reading as zero or an empty string.
///
/// ```swift
/// init(row: Row) throws {
///     endpoint = try row.decode(String.self, forColumn: "endpoint")
///     openedAtMs = try row.decode(Int64?.self, forColumn: "opened_at_ms")
/// }
/// ```
///
/// Two rows are equal when their values are, in order, whatever their columns are named.
public struct Row: Sendable, Hashable {
    /// The values, in the order of the query's columns.
    public let values: [DatabaseValue]
    /// The columns' names, in the same order (shared by every row of a statement).
    let columns: RowColumns
    /// The statement's SQL, for error messages; nil for a row built by hand.
    let sql: String?

    /// Creates a row from its values alone, as a test writes the rows it expects: it has no column
    /// names, so it is read by position only.
    /// - Parameter values: The values in column order.
    public init(_ values: [DatabaseValue]) {
        self.values = values
        self.columns = RowColumns(Array(repeating: "", count: values.count))
        self.sql = nil
    }

    /// Creates a row from its values and its columns' names.
    /// - Parameters:
    ///   - values: The values in column order.
    ///   - columnNames: The columns' names, one per value.
    public init(_ values: [DatabaseValue], columnNames: [String]) {
        precondition(values.count == columnNames.count, "a row needs one name per value")
        self.values = values
        self.columns = RowColumns(columnNames)
        self.sql = nil
    }

    init(values: [DatabaseValue], columns: RowColumns, sql: String) {
        self.values = values
        self.columns = columns
        self.sql = sql
    }

    /// The columns' names, in order.
    public var columnNames: [String] { columns.names }

    public static func == (lhs: Row, rhs: Row) -> Bool { lhs.values == rhs.values }
    public func hash(into hasher: inout Hasher) { hasher.combine(values) }

    /// The value of column `index`, or NULL past the last column: for single-column queries and
    /// pragmas. Records read by name (``decode(_:forColumn:)``).
    public subscript(index: Int) -> DatabaseValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The value of the column named `column`, or nil when the row has no such column. Names match
    /// exactly first, then regardless of ASCII case, as SQLite's do.
    public subscript(column: String) -> DatabaseValue? {
        columns.index(of: column).map { values[$0] }
    }

    /// Whether the row has a column of that name.
    /// - Parameter column: The name.
    /// - Returns: Whether ``subscript(_:)-(String)`` finds it.
    public func hasColumn(_ column: String) -> Bool { columns.index(of: column) != nil }

    /// The value of a column, converted.
    ///
    /// Decode an optional type (`Int64?.self`) to read NULL as nil; any other type refuses NULL.
    /// - Parameters:
    ///   - type: The Swift type to read.
    ///   - column: The column's name.
    /// - Returns: The value.
    /// - Throws: ``RowDecodingError`` naming the column when it is missing, NULL for a
    ///   non-optional type, or of a kind that does not convert (a real with a fraction to an integer,
    ///   a number to text). The message never holds the value.
    public func decode<Value: DatabaseValueConvertible>(
        _ type: Value.Type = Value.self, forColumn column: String
    ) throws(RowDecodingError) -> Value {
        guard let index = columns.index(of: column) else {
            throw RowDecodingError(column: column, problem: .missingColumn(available: columns.names), sql: sql)
        }
        let value = values[index]
        if let converted = Value.fromDatabaseValue(value) { return converted }
        let problem: RowDecodingError.Problem = value == .null
            ? .unexpectedNull(expected: "\(Value.self)")
            : .mismatch(expected: "\(Value.self)", found: value.storageClass)
        throw RowDecodingError(column: column, problem: problem, sql: sql)
    }
}

/// A statement's column names, shared by every row it returns.
final class RowColumns: Sendable {
    let names: [String]

    init(_ names: [String]) { self.names = names }

    /// The index of `name`: a linear scan, which for a row's few short names (most compare as
    /// small strings, in two machine words) is quicker than hashing.
    func index(of name: String) -> Int? {
        if let exact = names.firstIndex(of: name) { return exact }
        let lowered = name.lowercased()
        return names.firstIndex { $0.lowercased() == lowered }
    }
}
