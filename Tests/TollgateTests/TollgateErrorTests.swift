import Foundation
import Testing
import TollgateTestSupport
import Tollgate

@Suite("Error messages")
struct TollgateErrorTests {
    @Test("circuitOpen and throttled say the seeds' sentences with whole seconds, rounded up")
    func seedMessages() {
        #expect(TollgateError.circuitOpen(retryAfter: 44.2).description
            == "Service temporarily unavailable due to repeated failures. Please try again in 45 seconds.")
        #expect(TollgateError.throttled(retryAfter: 42).description
            == "Too many requests. Please wait 42 seconds before trying again.")
    }

    @Test("quotaExceeded names the endpoint, its cost, what remains and the reset in Pacific time")
    func quotaMessage() throws {
        let reset = try #require(PacificDay(key: "2026-11-22")).start
        let message = TollgateError.quotaExceeded(endpoint: "search.list", cost: 100, remaining: 50, resetsAt: reset).description
        #expect(message == "Daily API quota exceeded: search.list costs 100 units and 50 units remain today. "
            + "The quota resets at 2026-11-22 00:00 PST.")
        let summer = try #require(PacificDay(key: "2026-07-05")).start
        #expect(TollgateError.quotaExceeded(endpoint: "videos.list", cost: 1, remaining: 1, resetsAt: summer)
            .description.hasSuffix("costs 1 unit and 1 unit remains today. The quota resets at 2026-07-05 00:00 PDT."))
    }
}
