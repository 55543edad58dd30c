import Foundation
import Testing
import TollgateTestSupport
@testable import TollgateStore

@Suite("Throttle store operations")
struct ThrottleStorageTests {
    private let start = Date(timeIntervalSince1970: 1_795_291_200)

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
        let limits = try await store.read { db in try db.fetchAll("SELECT endpoint, request_limit, window_ms FROM throttle_limits") }
        #expect(limits == [Row(["/e", 3, 60_000])])
    }

    @Test("a limit of zero blocks the endpoint for a window at a time; an invalid limit is a typed error")
    func zeroAndInvalidLimits() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let blocked = try await store.admitRequest(endpoint: "/e", limit: ThrottleLimit(requests: 0, per: .seconds(30)), at: start)
        #expect(blocked == ThrottleAdmission(allowed: false, count: 0, limit: 0, retryAfter: 30))
        await #expect(throws: StoreError.self) {
            try await store.admitRequest(endpoint: "/e", limit: ThrottleLimit(requests: 1, per: .microseconds(10)), at: start)
        }
    }

    @Test("admission uses the endpoint's index, never a scan of the table")
    func admissionUsesTheIndex() throws {
        let store = try SQLiteStore(location: .inMemory)
        let plans = try store.read { db in
            try [
                "SELECT COUNT(*) FROM throttle_requests WHERE endpoint = ?",
                "DELETE FROM throttle_requests WHERE endpoint = ? AND at_ms <= ?",
                "SELECT COALESCE(SUM(units), 0) FROM quota_usage WHERE pacific_date = ? AND bucket = ?",
            ].flatMap { sql in
                try db.fetchAll("EXPLAIN QUERY PLAN " + sql, sql.contains("quota") ? ["2026-11-21", "b"] : sql.contains("DELETE") ? ["/e", 0] : ["/e"])
                    .compactMap { $0[3].string }
            }
        }
        #expect(!plans.isEmpty)
        #expect(plans.allSatisfy { $0.contains("USING") }, "\(plans)")
    }
}
