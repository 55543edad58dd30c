import Foundation
import Testing
import TollgateCore
@testable import TollgateSQLite
import TollgateTestSupport

/// Schema version 7: `quota_events`' check on the event kind, written as comparisons so that no
/// charge or refund builds a temporary index (as `kind IN (seven kinds)` did), with the same kinds
/// allowed and every row of an older file kept.
@Suite("The event kind's check")
struct EventKindCheckTests {
    private static let kinds = ["charge", "refund", "reset", "exhausted", "limit", "announced", "settle"]
    /// SQLite's extended result code for a failed CHECK.
    private static let checkFailed: Int32 = 275

    @Test("an event's INSERT is planned without a temporary index")
    func insertBuildsNoTemporaryIndex() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("plan.sqlite"))
        let opcodes = try store.read { db in
            try db.fetchAll(sql: """
                EXPLAIN INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
                VALUES (1764300000000, '2026-11-28', 'youtube', 'videos.list', 'charge', 1, NULL, NULL)
                """).map { try $0.decode(String.self, forColumn: "opcode") }
        }
        #expect(opcodes.contains("Insert"), "the plan is the INSERT's")
        #expect(!opcodes.contains("OpenEphemeral"), "the kind's check builds an index each time it runs")
    }

    @Test("every kind is taken and any other refused, in a new file and in one migrated from version 6")
    func sameKindsAllowed() throws {
        let directory = try TemporaryDirectory()
        let older = directory.path("version-6.sqlite")
        let previous = Array(Migration.all.prefix { $0.version <= 6 })
        try #require(previous.map(\.version) == [1, 2, 3, 4, 5, 6])
        let rows = try SQLiteStore(path: older, configuration: .init(migrations: previous)).write { db in
            for (index, kind) in Self.kinds.enumerated() {
                try db.execute(sql: """
                    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
                    VALUES (?, '2026-11-28', 'youtube', 'videos.list', ?, ?, ?, ?)
                    """, arguments: [Int64(1_764_300_000_000 + index), kind, index, index == 0 ? nil : 1,
                                     "detail \(index)"])
            }
            return try Self.events(db)
        }
        #expect(rows.count == Self.kinds.count)

        let migrated = try SQLiteStore(path: older)
        #expect(migrated.migrationsAppliedAtOpen.map(\.version) == [7, 8])
        #expect(try migrated.read { db in try Self.events(db) } == rows, "every row and id is kept")
        let fresh = try SQLiteStore(path: directory.path("new.sqlite"))
        for store in [migrated, fresh] {
            try store.write { db in
                for kind in Self.kinds {
                    try db.execute(sql: """
                        INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units)
                        VALUES (1, '2026-11-28', 'youtube', 'videos.list', ?, 0)
                        """, arguments: [kind])
                }
            }
            for kind in ["", "Charge", "charge ", "refunds", "other"] {
                let error = #expect(throws: DatabaseError.self, "kind \"\(kind)\"") {
                    try store.write { db in
                        try db.execute(sql: """
                            INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units)
                            VALUES (1, '2026-11-28', 'youtube', 'videos.list', ?, 0)
                            """, arguments: [kind])
                    }
                }
                #expect(error?.extendedResultCode == Self.checkFailed)
            }
        }
        // The indexes that hold one refund and one settlement per charge came back with the table.
        #expect(throws: DatabaseError.self) {
            try migrated.write { db in
                try db.execute(sql: """
                    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id)
                    VALUES (2, '2026-11-28', 'youtube', 'videos.list', 'refund', -1, 1)
                    """)
            }
        }
    }

    private static func events(_ db: Database) throws -> [[String]] {
        try db.fetchAll(sql: """
            SELECT id, at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail FROM quota_events ORDER BY id
            """).map { row in
            try ["id", "at_ms", "pacific_date", "bucket", "endpoint", "kind", "units", "reservation_id", "detail"].map { column in
                let value = try row.decode(DatabaseValue.self, forColumn: column)
                return "\(value)"
            }
        }
    }
}
