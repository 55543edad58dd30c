import Testing
import TollgateCore

/// The batch charge's detail: written and read back by one pair of functions, and tallied the
/// same whichever store counted the charges.
@Suite("Batch charges: the detail's one format")
struct QuotaBatchUsageTests {
    @Test("what batchDetail writes, batchIDs reads back; any other detail is not a batch's")
    func detailRoundTrip() {
        for ids in [1, 2, 49, 50, 1_000] {
            #expect(QuotaRules.batchIDs(inDetail: QuotaRules.batchDetail(ids: ids)) == ids)
        }
        for detail in ["batch of many IDs", "batch of 0 IDs", "batch of -3 IDs", "batch of  IDs", "batch of 5 IDs!",
                       "a batch of 5 IDs", "304 Not Modified", ""] {
            #expect(QuotaRules.batchIDs(inDetail: detail) == nil, "\(detail)")
        }
    }

    @Test("charges counted per detail fold into one row per bucket and endpoint, ordered, odd details left out")
    func tally() {
        let day = PacificDay(key: "2026-11-27")!
        let rows = QuotaBatchUsage.tally(on: day, [
            ("y", "videos.list", QuotaRules.batchDetail(ids: 49), 2),
            ("b", "e.list", QuotaRules.batchDetail(ids: 3), 1),
            ("y", "videos.list", QuotaRules.batchDetail(ids: 7), 1),
            ("y", "channels.list", "batch of many IDs", 4),
        ])
        #expect(rows == [
            QuotaBatchUsage(day: day, bucket: "b", endpoint: "e.list", batches: 1, ids: 3),
            QuotaBatchUsage(day: day, bucket: "y", endpoint: "videos.list", batches: 3, ids: 105),
        ])
    }
}
