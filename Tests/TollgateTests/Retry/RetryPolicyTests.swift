import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
import Tollgate

@Suite("Retry policy")
struct RetryPolicyTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("without jitter the delays are 1, 2, 4 s and a 4th retry is refused; raising the maximum allows 8 s")
    func scheduleWithoutJitter() {
        var generator = SeededGenerator(seed: 1)
        let policy = RetryPolicy(jitter: 0)
        let delays = (1...4).map { policy.delay(forRetry: $0, now: now, using: &generator) }
        #expect(delays == [.wait(.seconds(1)), .wait(.seconds(2)), .wait(.seconds(4)),
                           .giveUp(.retriesExhausted(retries: 3))])
        let four = RetryPolicy(maximumRetries: 4, jitter: 0)
        #expect(four.delay(forRetry: 4, now: now, using: &generator) == .wait(.seconds(8)))
        let capped = RetryPolicy(maximumRetries: 10, maximumDelay: .seconds(20), jitter: 0)
        #expect(capped.delay(forRetry: 6, now: now, using: &generator) == .wait(.seconds(20)))
    }

    @Test("with the default ±20 % jitter every delay stays within its bounds, spreads, and is reproducible by seed")
    func jitterBounds() {
        let policy = RetryPolicy.default
        var generator = SeededGenerator(seed: 42)
        for retry in 1...3 {
            let base = Double(1 << (retry - 1))
            var seen: Set<Duration> = []
            for _ in 0..<200 {
                guard case .wait(let delay) = policy.delay(forRetry: retry, now: now, using: &generator) else {
                    Issue.record("retry \(retry) was refused")
                    return
                }
                #expect(delay.timeInterval >= base * 0.8 - 1e-9 && delay.timeInterval <= base * 1.2 + 1e-9)
                seen.insert(delay)
            }
            #expect(seen.count > 100, "jitter spreads retry \(retry)")
        }
        var first = SeededGenerator(seed: 7)
        var second = SeededGenerator(seed: 7)
        #expect(policy.delay(forRetry: 2, now: now, using: &first) == policy.delay(forRetry: 2, now: now, using: &second))
    }

    @Test("Retry-After in seconds and as an HTTP date is parsed; garbage is ignored")
    func retryAfterParsing() throws {
        #expect(RetryAfter(headerValue: "120") == .seconds(120))
        #expect(RetryAfter(headerValue: " 0 ") == .seconds(0))
        let imf = try #require(RetryAfter(headerValue: "Wed, 21 Oct 2026 07:28:00 GMT"))
        let expected = Date(timeIntervalSince1970: 1_792_567_680)
        #expect(imf == .date(expected))
        #expect(RetryAfter(headerValue: "Wednesday, 21-Oct-26 07:28:00 GMT") == .date(expected))
        #expect(RetryAfter(headerValue: "Wed Oct 21 07:28:00 2026") == .date(expected))
        for garbage in ["", "soon", "-5", "1.5", "12s", "Wed, 32 Oct 2026 07:28:00 GMT", "0x10"] {
            #expect(RetryAfter(headerValue: garbage) == nil, "\(garbage)")
        }
        #expect(RetryAfter.date(expected).delay(from: expected.addingTimeInterval(-30)) == .seconds(30))
        #expect(RetryAfter.date(expected).delay(from: expected.addingTimeInterval(30)) == .zero)
    }

    @Test("Retry-After wins over the schedule, unjittered; past the maximum delay the policy gives up")
    func retryAfterOverridesSchedule() {
        var generator = SeededGenerator(seed: 3)
        let policy = RetryPolicy.default
        #expect(policy.delay(forRetry: 1, retryAfter: .seconds(7), now: now, using: &generator) == .wait(.seconds(7)))
        #expect(policy.delay(forRetry: 1, retryAfter: .date(now.addingTimeInterval(12)), now: now, using: &generator)
            == .wait(.seconds(12)))
        #expect(policy.delay(forRetry: 1, retryAfter: .seconds(3600), now: now, using: &generator)
            == .giveUp(.retryAfterExceedsMaximum(retryAfter: .seconds(3600), maximum: .seconds(60))))
    }

    @Test("a Retry-After shorter than the schedule's delay waits the schedule's delay, jittered as without one")
    func retryAfterBelowScheduleIsRaised() {
        let policy = RetryPolicy(jitter: 0)
        var generator = SeededGenerator(seed: 5)
        let zero = (1...3).map { policy.delay(forRetry: $0, retryAfter: .seconds(0), now: now, using: &generator) }
        #expect(zero == [.wait(.seconds(1)), .wait(.seconds(2)), .wait(.seconds(4))])
        #expect(policy.delay(forRetry: 3, retryAfter: .seconds(3), now: now, using: &generator) == .wait(.seconds(4)))
        #expect(policy.delay(forRetry: 2, retryAfter: .date(now.addingTimeInterval(-60)), now: now, using: &generator)
            == .wait(.seconds(2)), "a date already past")
        #expect(policy.delay(forRetry: 1, retryAfter: .seconds(1), now: now, using: &generator) == .wait(.seconds(1)))
        var jittered = SeededGenerator(seed: 9)
        var plain = SeededGenerator(seed: 9)
        #expect(RetryPolicy.default.delay(forRetry: 2, retryAfter: .seconds(0), now: now, using: &jittered)
            == RetryPolicy.default.delay(forRetry: 2, now: now, using: &plain))
    }

    @Test("retryable: 429, 502, 503, 504, timeouts and connection errors; 500 only when configured")
    func retryableTriggers() {
        let policy = RetryPolicy.default
        for status in [429, 502, 503, 504] { #expect(policy.isRetryable(.status(status))) }
        for status in [400, 401, 403, 404, 500, 501] { #expect(!policy.isRetryable(.status(status))) }
        #expect(policy.isRetryable(.timeout) && policy.isRetryable(.connectionError))
        #expect(!policy.isRetryable(.other))
        #expect(policy.retryingInternalServerErrors().isRetryable(.status(500)))
    }

    @Test("only idempotent methods are retried unless the request is marked idempotent")
    func idempotency() {
        let policy = RetryPolicy.default
        for method: HTTPRequest.Method in [.get, .head, .options, .put, .delete] {
            #expect(policy.mayRetry(method: method, markedIdempotent: false))
        }
        #expect(!policy.mayRetry(method: .post, markedIdempotent: false))
        #expect(!policy.mayRetry(method: .patch, markedIdempotent: false))
        #expect(policy.mayRetry(method: .post, markedIdempotent: true))
    }
}
