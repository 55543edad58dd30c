import Foundation
import Testing
import Tollgate
import TollgateTestSupport

@Suite("tollgate quota reconcile and the burn rate")
struct QuotaReconcileCommandTests {
    @Test("reconcile --used sets today's count to the console's by one event; show gives the burn rate and the forecast")
    func reconcileAndForecast() async throws {
        let fixture = try AdminFixture()
        let ledger = try fixture.ledger
        for _ in 0..<5 { try await ledger.reserve(endpoint: "videos.list") }

        let reconciled = try fixture.tollgate("quota", "reconcile", "--used", "9500")
        #expect(reconciled.status == 0, "\(reconciled.stderr)")
        #expect(reconciled.stdout.contains("youtube on \(PacificDay(containing: Date()).key): 9,500 units used (the ledger had 5; +9,495 units, recorded as an event)"))
        #expect(try fixture.value("SELECT units FROM quota_today WHERE bucket = 'youtube' AND endpoint = '*'") == "9495")
        #expect(try fixture.value("SELECT COUNT(*) FROM quota_events WHERE kind = 'charge' AND endpoint = '*' AND detail LIKE 'reconciled%'") == "1")

        let show = try fixture.tollgate("quota", "show")
        #expect(show.stdout.contains("youtube: 9,500/10,000 units used · 500 left"), "\(show.stdout)")
        #expect(show.stdout.contains("burning 5 units/h over the last hour · lasts until the reset"), "\(show.stdout)")
        let json = try fixture.tollgate("quota", "show", "--json")
        let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let bucket = try #require((report?["buckets"] as? [[String: Any]])?.first { $0["bucket"] as? String == "youtube" })
        #expect(bucket["burn_per_hour"] as? Double == 5)

        let down = try fixture.tollgate("quota", "reconcile", "--used", "100", "--bucket", "youtube")
        #expect(down.stdout.contains("(the ledger had 9,500; -9,400 units, recorded as an event)"), "\(down.stdout)")
        let bad = try fixture.tollgate("quota", "reconcile", "--used", "-3")
        #expect(bad.status == 64)
        let unknown = try fixture.tollgate("quota", "reconcile", "--used", "3", "--bucket", "nope")
        #expect(unknown.status != 0)
        #expect(try await ledger.discrepancies().isEmpty)
    }

    @Test("a bucket spent while it burns says so, rather than a run-out instant that is now")
    func spentBucketForecast() async throws {
        let fixture = try AdminFixture()
        let ledger = try fixture.ledger
        for _ in 0..<5 { try await ledger.reserve(endpoint: "videos.list") }
        #expect(try fixture.tollgate("quota", "set-limit", "youtube", "5").status == 0)

        let show = try fixture.tollgate("quota", "show")
        #expect(show.stdout.contains("youtube: 5/5 units used · 0 left"), "\(show.stdout)")
        #expect(show.stdout.contains("burning 5 units/h over the last hour · spent: refused until the reset"), "\(show.stdout)")
        #expect(!show.stdout.contains("runs out at"), "\(show.stdout)")
    }
}
