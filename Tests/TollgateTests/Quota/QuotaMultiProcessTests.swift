import Foundation
import Testing
import TollgateTestSupport
import Tollgate

@Suite("Quota ledger across processes")
struct QuotaMultiProcessTests {
    private static let now = utc("2026-11-21T18:00:00Z")
    private static var nowMs: String { String(Int64(now.timeIntervalSince1970 * 1000)) }

    /// Parses `granted G refused R refunded F`.
    private static func counts(_ result: WorkerProcess.Result) throws -> (granted: Int, refused: Int, refunded: Int) {
        let words = result.stdout.split(whereSeparator: \.isWhitespace)
        guard words.count == 6, let granted = Int(words[1]), let refused = Int(words[3]), let refunded = Int(words[5]) else {
            throw StoreRefusal.invalidArgument("unexpected worker output \(result.stdout) \(result.stderr)")
        }
        return (granted, refused, refunded)
    }

    /// Units charged, net, after each event in commit order: the bucket's usage at every moment.
    private static func runningTotals(_ store: SQLiteStore) async throws -> [Int] {
        let units = try await store.read { db in
            try db.fetchAll(sql: "SELECT units FROM quota_events WHERE bucket = 'shared' ORDER BY id").map { $0[0].int ?? 0 }
        }
        var total = 0
        return units.map { total += $0; return total }
    }

    @Test("four processes reserving against one file grant exactly the limit, never more, and the totals equal the events")
    func exactlyTheLimit() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("shared.sqlite")
        // 4 × 150 reservations of 4 units against 1,000: 600 asks for 250 slots.
        let results = try await WorkerProcess.runConcurrently("quota-reserve", count: 4) { _ in
            [path, Self.nowMs, "1000", "4", "150", "0"]
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let counts = try results.map(Self.counts)
        #expect(counts.map(\.granted).reduce(0, +) == 250)
        #expect(counts.map(\.refused).reduce(0, +) == 350)

        let store = try SQLiteStore(path: path)
        let totals = try await Self.runningTotals(store)
        #expect(totals.max() == 1000)
        #expect(totals.last == 1000)
        let ledger = try QuotaLedger(
            storage: store,
            configuration: QuotaConfiguration(bucketLimits: ["shared": 1000], defaultBucket: "shared"),
            clock: ManualClock(now: Self.now)
        )
        #expect(try await ledger.usage().map(\.units) == [1000])
        #expect(try await ledger.usage().map(\.calls) == [250])
        #expect(try await ledger.discrepancies().isEmpty)
    }

    @Test("processes that reserve and refund at once never take the bucket past its limit, and the totals equal the events")
    func withRefunds() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("shared.sqlite")
        let results = try await WorkerProcess.runConcurrently("quota-reserve", count: 4) { index in
            // Every worker refunds (every 2nd or 3rd grant), so refunds happen whichever process wins the race.
            [path, Self.nowMs, "500", "7", "120", index.isMultiple(of: 2) ? "2" : "3"]
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let counts = try results.map(Self.counts)
        let netCalls = counts.map { $0.granted - $0.refunded }.reduce(0, +)
        #expect(counts.map(\.refunded).reduce(0, +) > 0)

        let store = try SQLiteStore(path: path)
        let totals = try await Self.runningTotals(store)
        #expect(totals.allSatisfy { $0 <= 500 && $0 >= 0 })
        #expect(totals.last == netCalls * 7)
        let discrepancies = try await store.quotaLedgerDiscrepancies()
        #expect(discrepancies.isEmpty)
    }
}
