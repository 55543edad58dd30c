import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

@Suite("Throttle store operations")
struct ThrottleStorageTests {
    private let start = Date(timeIntervalSince1970: 1_795_291_200)

    @Test("the window's text: every Int64 written as JSON integers that SQLite's json_each and the decoder read back")
    func windowText() throws {
        let times: [Int64] = [.min, -1_000, -1, 0, 7, 10, 1_795_291_200_123, .max]
        let text = AdmittedTimes.encode(times)
        #expect(text == "[\(times.map(String.init).joined(separator: ","))]")
        #expect(AdmittedTimes.encode([]) == "[]")
        #expect(AdmittedTimes.decode(text) == times.filter { $0 != .min }, "Int64.min's magnitude overflows: skipped, never wrapped")
        let store = try SQLiteStore(location: .inMemory)
        let read = try store.read { db in
            try db.fetchAll(sql: "SELECT value FROM json_each(?)", arguments: [AdmittedTimes.encode(Array(times.dropFirst()))])
        }
        #expect(read.map { $0[0].int64 } == times.dropFirst().map { $0 })
    }

    @Test("the window's text copies the digits a time shares with the one before, and only those")
    func windowTextSharedDigits() {
        func plain(_ times: [Int64]) -> String { "[\(times.map(String.init).joined(separator: ","))]" }
        // A window as an admission writes it: close times, some equal, across a change of digit count.
        var window: [Int64] = []
        var time: Int64 = 1_764_299_999_990
        for step in 0..<80 {
            window.append(time)
            time += Int64(step % 3)
        }
        #expect(AdmittedTimes.encode(window) == plain(window))
        let edges: [[Int64]] = [
            [9, 10, 11, 99, 100, 101, 999, 1_000], [-100, -99, -10, -9, -1, 0, 1, 9, 10], [5, 5, 5], [0, 0],
            [99_999, 100_000, 100_009, 100_010, 190_000], [Int64.max - 1, .max, .max], [.min, .min + 1, -1, 0],
            [1_999, 2_000, 2_001], [7],
        ]
        for times in edges { #expect(AdmittedTimes.encode(times) == plain(times)) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let base = Int64.random(in: -1_000_000_000_000...1_000_000_000_000, using: &generator)
            let times = (0..<Int.random(in: 1...12, using: &generator)).map { _ in
                base + Int64.random(in: -2_000...2_000, using: &generator)
            }.sorted()
            #expect(AdmittedTimes.encode(times) == plain(times), "\(times)")
        }
    }

    @Test("the window's text read back from hand edits: out of order is sorted, damage and numbers past Int64 are skipped")
    func windowTextHandEdits() {
        let cases: [(String, [Int64])] = [
            ("[3,1,2]", [1, 2, 3]), ("[ 1 , 2 ]", [1, 2]), ("[1,x2,3]", [1, 2, 3]), ("[--5,1-2,-x5]", [-5, 1, 2, 5]),
            ("[9223372036854775807,9223372036854775808]", [.max]),
            ("[-9223372036854775807,-9223372036854775808]", [-Int64.max]),
            ("[18446744073709551616,99999999999999999999,7]", [7]), ("", []), ("[]", []), ("[-0]", [0]),
            ("1795291200123", [1_795_291_200_123]),
        ]
        for (text, times) in cases {
            #expect(AdmittedTimes.decode(text) == times, "\(text)")
        }
        let window = (0..<80).map { 1_795_291_200_000 + Int64($0) * 25 }
        #expect(AdmittedTimes.decode(AdmittedTimes.encode(window)) == window)
    }

    @Test("a lowered limit waits for enough requests to leave the window, not just the oldest")
    func loweredLimit() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let five = ThrottleLimit(requests: 5, per: .seconds(60))
        for second in 0..<5 {
            let admission = try await store.admitRequest(endpoint: "/e", limit: five, at: start.addingTimeInterval(TimeInterval(second)))
            #expect(admission.allowed)
            #expect(admission.count == second + 1)
        }
        // Requests at 0…4 s; under a limit of 3 there is room for one more once three have left:
        // the third oldest, of 2 s, leaves at 62 s.
        let three = ThrottleLimit(requests: 3, per: .seconds(60))
        let refused = try await store.admitRequest(endpoint: "/e", limit: three, at: start.addingTimeInterval(10))
        #expect(refused == ThrottleAdmission(allowed: false, count: 5, limit: 3, retryAfter: 52))
        let limits = try await store.read { db in try db.fetchAll(sql: "SELECT endpoint, request_limit, window_ms FROM throttle_limits") }
        #expect(limits == [Row(["/e", 3, 60_000])])
    }

    @Test("a limit of zero blocks the endpoint for a window at a time; an invalid limit is a typed error")
    func zeroAndInvalidLimits() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let blocked = try await store.admitRequest(endpoint: "/e", limit: ThrottleLimit(requests: 0, per: .seconds(30)), at: start)
        #expect(blocked == ThrottleAdmission(allowed: false, count: 0, limit: 0, retryAfter: 30))
        await #expect(throws: StoreRefusal.self) {
            try await store.admitRequest(endpoint: "/e", limit: ThrottleLimit(requests: 1, per: .microseconds(10)), at: start)
        }
    }

    @Test("admission and a refund read through indexes, never a scan of a table")
    func admissionUsesTheIndex() throws {
        let store = try SQLiteStore(location: .inMemory)
        let plans = try store.read { db in
            try [
                "SELECT request_limit, window_ms, admitted_at_ms FROM throttle_limits WHERE endpoint = ?",
                "SELECT COALESCE(SUM(units), 0) FROM quota_usage WHERE pacific_date = ? AND bucket = ?",
                // A refund's look-up of the further charges of its reservation.
                "SELECT id FROM quota_events WHERE reservation_id = ? AND kind = 'charge'",
            ].flatMap { sql in
                let arguments: [DatabaseValue] = sql.contains("quota_usage") ? ["2026-11-21", "b"]
                    : sql.contains("reservation_id") ? [.integer(1)] : ["/e"]
                return try db.fetchAll(sql: "EXPLAIN QUERY PLAN " + sql, arguments: StatementArguments(arguments))
                    .map { try $0.decode(String.self, forColumn: "detail") }
            }
        }
        #expect(!plans.isEmpty)
        #expect(plans.allSatisfy { $0.contains("USING") }, "\(plans)")
    }

    @Test("the window keeps only the admitted times still in it, and a row that says otherwise is repaired")
    func windowKeepsItsTimes() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let limit = ThrottleLimit(requests: 3, per: .seconds(10))
        for offset in 0..<3 {
            _ = try await store.admitRequest(endpoint: "/e", limit: limit, at: start.addingTimeInterval(Double(offset)))
        }
        let admitted = { try await store.read { db in
            try db.fetchValue(sql: "SELECT admitted_at_ms FROM throttle_limits WHERE endpoint = '/e'").string
        } }
        #expect(try await admitted() == "[1800000000000,1800000001000,1800000002000]")
        // 10.5 s after the first: it left the window, the others stay, one more fits.
        let later = try await store.admitRequest(endpoint: "/e", limit: limit, at: start.addingTimeInterval(10.5))
        #expect(later == ThrottleAdmission(allowed: true, count: 3, limit: 3, retryAfter: nil))
        #expect(try await admitted() == "[1800000001000,1800000002000,1800000010500]")

        // A hand-edited row: garbage is skipped, an overflowing number too; it throttles less, never more.
        try await store.write { db in
            try db.execute(sql: "UPDATE throttle_limits SET admitted_at_ms = '[1800000010500, x, 99999999999999999999]'")
        }
        let repaired = try await store.admitRequest(endpoint: "/e", limit: limit, at: start.addingTimeInterval(11))
        #expect(repaired == ThrottleAdmission(allowed: true, count: 2, limit: 3, retryAfter: nil))
        #expect(try await admitted() == "[1800000010500,1800000011000]")
    }

    @Test("with the same limits an admission rewrites only the window's times; new limits are stored with it")
    func limitsStoredWithTheWindow() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("limits.sqlite"))
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let stored = { try await store.read { db in
            try db.fetchAll(sql: "SELECT request_limit, window_ms, updated_at_ms, admitted_at_ms FROM throttle_limits")
                .map { row in "\(row[0].int ?? -1) \(row[1].int ?? -1) \(row[2].int64 ?? -1) \(row[3].string ?? "")" }
        } }
        let five = ThrottleLimit(requests: 5, per: .seconds(10))
        for offset in 0..<3 {
            _ = try await store.admitRequest(endpoint: "/e", limit: five, at: start.addingTimeInterval(Double(offset)))
        }
        #expect(try await stored() == ["5 10000 1800000000000 [1800000000000,1800000001000,1800000002000]"],
                "the row keeps the time its limits were set")
        let seven = ThrottleLimit(requests: 7, per: .seconds(20))
        _ = try await store.admitRequest(endpoint: "/e", limit: seven, at: start.addingTimeInterval(3))
        #expect(try await stored() == ["7 20000 1800000003000 [1800000000000,1800000001000,1800000002000,1800000003000]"])
        // A row deleted behind the store's back (by the sqlite3 shell, say) is written anew.
        let shell = try Database(path: directory.path("limits.sqlite"))
        try shell.execute(sql: "DELETE FROM throttle_limits")
        _ = try await store.admitRequest(endpoint: "/e", limit: seven, at: start.addingTimeInterval(4))
        #expect(try await stored() == ["7 20000 1800000004000 [1800000004000]"])
    }

    @Test("a file from before the one-row window keeps its requests through the migration")
    func migrationKeepsTheWindow() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("old.sqlite")
        let old = try SQLiteStore(path: path, configuration: .init(migrations: Array(Migration.all.prefix(3))))
        try old.write { db in
            try db.execute(sql: "INSERT INTO throttle_limits VALUES ('/e', 10, 60000, 0)")
            for at in [3, 1, 2] as [Int64] {
                try db.execute(sql: "INSERT INTO throttle_requests (endpoint, at_ms) VALUES ('/e', ?)", arguments: [at])
            }
            try db.execute(sql: "INSERT INTO throttle_limits VALUES ('/idle', 5, 1000, 0)")
        }
        let migrated = try SQLiteStore(path: path)
        let rows = try migrated.read { db in
            try db.fetchAll(sql: "SELECT endpoint, admitted_at_ms FROM throttle_limits ORDER BY endpoint")
        }
        #expect(rows == [Row(["/e", "[1,2,3]"]), Row(["/idle", "[]"])])
    }
}
