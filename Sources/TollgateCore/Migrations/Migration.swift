import Foundation

/// One step of the schema, from `Migrations/NNNN_name.sql`.
public struct Migration: Sendable, Hashable, Identifiable {
    /// The number in the file name; migrations apply in increasing order.
    public let version: Int
    /// The name after the number, such as `initial`.
    public let name: String
    /// The SQL script, exactly as in the file.
    public let sql: String

    /// Creates a migration.
    /// - Parameters:
    ///   - version: Its number.
    ///   - name: Its name.
    ///   - sql: The SQL script.
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    public var id: Int { version }

    /// The file name it comes from, `NNNN_name.sql`.
    public var fileName: String {
        let number = String(version)
        return String(repeating: "0", count: max(0, 4 - number.count)) + number + "_" + name + ".sql"
    }

    /// The SHA-256 of ``sql`` in lowercase hex: recorded when applied, compared on every open.
    public var checksum: String {
        SHA256Hex.digest(sql.utf8)
    }
}

/// Whether one migration has been applied to a database.
public struct MigrationStatus: Sendable, Hashable {
    /// The migration.
    public let migration: Migration
    /// When it was applied, or nil while it is pending.
    public let appliedAt: Date?

    /// Whether it has been applied.
    public var isApplied: Bool { appliedAt != nil }

    /// Creates a status, as a store reads it from its database's history.
    /// - Parameters:
    ///   - migration: The migration.
    ///   - appliedAt: When it was applied, or nil while it is pending.
    public init(migration: Migration, appliedAt: Date?) {
        self.migration = migration
        self.appliedAt = appliedAt
    }
}
