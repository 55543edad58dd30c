import Foundation
import TollgateCore

/// The SQL of `admin_events`, on a ``Database`` inside a transaction the caller opened, so every
/// operation records its event in the same transaction as the change it describes.
enum AdminEventTable {
    /// Appends an event and returns its id.
    @discardableResult
    static func record(
        _ db: Database, at: Date, subject: String, target: String?, action: String, detail: String?
    ) throws -> Int64 {
        try db.cachedStatement(
            sql: "INSERT INTO admin_events (at_ms, subject, target, action, detail) VALUES (?, ?, ?, ?, ?)"
        ).execute(arguments: [milliseconds(at), subject, target, action, detail])
        return db.lastInsertedRowID
    }

    /// The latest events, newest first, of one subject or of all.
    static func recent(_ db: Database, subject: String?, limit: Int) throws -> [AdminEvent] {
        let columns = "id, at_ms, subject, target, action, detail"
        let rows = if let subject {
            try db.fetchAll(
                sql: "SELECT \(columns) FROM admin_events WHERE subject = ? ORDER BY id DESC LIMIT ?",
                arguments: [subject, max(limit, 0)]
            )
        } else {
            try db.fetchAll(sql: "SELECT \(columns) FROM admin_events ORDER BY id DESC LIMIT ?", arguments: [max(limit, 0)])
        }
        return try rows.map { row in
            AdminEvent(
                id: try row.decode(Int64.self, forColumn: "id"),
                at: try row.decodeDate(forColumn: "at_ms") ?? Date(timeIntervalSince1970: 0),
                subject: try row.decode(String.self, forColumn: "subject"),
                target: try row.decode(String?.self, forColumn: "target"),
                action: try row.decode(String.self, forColumn: "action"),
                detail: try row.decode(String?.self, forColumn: "detail")
            )
        }
    }

    static func milliseconds(_ date: Date) -> Int64 {
        date.millisecondsSince1970
    }
}
