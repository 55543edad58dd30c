import Foundation

/// The SQL of `admin_events`, on a ``Database`` inside a transaction the caller opened, so every
/// operation records its event in the same transaction as the change it describes.
enum AdminEventTable {
    /// Appends an event and returns its id.
    @discardableResult
    static func record(
        _ db: Database, at: Date, subject: String, target: String?, action: String, detail: String?
    ) throws -> Int64 {
        try db.cachedStatement(
            "INSERT INTO admin_events (at_ms, subject, target, action, detail) VALUES (?, ?, ?, ?, ?)"
        ).execute([.integer(milliseconds(at)), .text(subject), .optionalText(target), .text(action), .optionalText(detail)])
        return db.lastInsertedRowID
    }

    /// The latest events, newest first, of one subject or of all.
    static func recent(_ db: Database, subject: String?, limit: Int) throws -> [AdminEvent] {
        let columns = "id, at_ms, subject, target, action, detail"
        let rows = if let subject {
            try db.fetchAll(
                "SELECT \(columns) FROM admin_events WHERE subject = ? ORDER BY id DESC LIMIT ?",
                [.text(subject), .int(max(limit, 0))]
            )
        } else {
            try db.fetchAll("SELECT \(columns) FROM admin_events ORDER BY id DESC LIMIT ?", [.int(max(limit, 0))])
        }
        return rows.map { row in
            AdminEvent(
                id: row[0].int64 ?? 0, at: Date(timeIntervalSince1970: TimeInterval(row[1].int64 ?? 0) / 1000),
                subject: row[2].string ?? "", target: row[3].string, action: row[4].string ?? "", detail: row[5].string
            )
        }
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
