import Foundation
import Testing
import TollgateTestSupport
import Tollgate

@Suite("Outcome classifier")
struct OutcomeClassifierTests {
    let classifier = OutcomeClassifier()

    func googleError(_ reason: String, status: Int = 403) -> Data {
        Data(#"{"error":{"code":\#(status),"message":"x","errors":[{"domain":"d","reason":"\#(reason)"}]}}"#.utf8)
    }

    @Test("statuses: 2xx and 3xx succeed, 429 is a rate limit, 5xx fail, other 4xx are neutral")
    func statuses() {
        #expect(classifier.outcome(status: 200) == .success)
        #expect(classifier.outcome(status: 304) == .success)
        #expect(classifier.outcome(status: 429) == .rateLimited)
        for status in [500, 502, 503, 504] { #expect(classifier.outcome(status: status) == .failure) }
        for status in [400, 401, 403, 404, 409, 422] { #expect(classifier.outcome(status: status) == .neutral) }
    }

    @Test("Google's 403 reasons: rate limits count, a spent daily quota does not")
    func googleReasons() {
        #expect(classifier.outcome(status: 403, body: googleError("rateLimitExceeded")) == .rateLimited)
        #expect(classifier.outcome(status: 403, body: googleError("userRateLimitExceeded")) == .rateLimited)
        #expect(classifier.outcome(status: 403, body: googleError("quotaExceeded")) == .neutral)
        #expect(classifier.outcome(status: 403, body: googleError("dailyLimitExceeded")) == .neutral)
        #expect(classifier.outcome(status: 403, body: googleError("forbidden")) == .neutral)
        #expect(classifier.outcome(status: 403, body: Data("<html>rateLimitExceeded</html>".utf8)) == .neutral)
        let details = Data(#"{"error":{"code":403,"details":[{"@type":"x","reason":"rateLimitExceeded"}]}}"#.utf8)
        #expect(classifier.outcome(status: 403, body: details) == .rateLimited)
    }

    @Test("errors: timeouts and network errors fail, cancellation and Tollgate's refusals are neutral")
    func errors() {
        #expect(classifier.outcome(error: URLError(.timedOut)) == .failure)
        #expect(classifier.outcome(error: URLError(.cannotConnectToHost)) == .failure)
        #expect(classifier.outcome(error: CancellationError()) == .neutral)
        #expect(classifier.outcome(error: TollgateError.throttled(retryAfter: 3)) == .neutral)
        struct Classified: CircuitClassifiableError { var circuitOutcome: CircuitOutcome { .rateLimited } }
        #expect(classifier.outcome(error: Classified()) == .rateLimited)
    }

    @Test("the classifier is configurable: extra statuses, reasons and an override")
    func configurable() {
        var custom = OutcomeClassifier(override: { status, _ in status == 418 ? .failure : nil })
        custom.failureStatuses.remove(501)
        custom.rateLimitStatuses.insert(420)
        #expect(custom.outcome(status: 418) == .failure)
        #expect(custom.outcome(status: 501) == .neutral)
        #expect(custom.outcome(status: 420) == .rateLimited)
    }
}
