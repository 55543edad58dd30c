import Foundation
import Logging
import PostgresNIO
@testable import TollgatePostgres
import TollgateCore
import TollgateTestSupport

/// One generated scenario of the differential test: a bucket and an endpoint of its own, a clock
/// near a Pacific midnight (the spring and autumn changes of daylight time among them), and a few
/// random steps — reservations in every kind of window, announcements up and down, settlements past
/// the limit, refunds, limit changes, the server's exhausted mark, time passing — with, between
/// them, batches of costs put to `tollgate_admit_batch` (its clocked copy) and to the quota machine.
struct AdmissionScenario {
    let index: Int
    let bucket: String
    let endpoint: String
    let clock: ManualClock
    var random: SeededGenerator
    var configuredLimit: Int
    var lastReservation: Int64?
    /// What happened, for the failure message.
    var steps: [String] = []
    /// Costs the function admitted, and costs it left to the full path, over the scenario.
    var admittedByFunction = 0
    var declinedByFunction = 0

    /// Instants near which scenarios start: Pacific midnights around the spring change
    /// (2026-03-08, 23 hours), the changes themselves, around the autumn change (2026-11-01,
    /// 25 hours), and an ordinary day.
    static let anchors: [Int64] = [
        1_772_956_800, 1_772_964_000, 1_773_039_600,   // 2026-03-08 00:00 PST, 02:00 PST → 03:00 PDT, 03-09 00:00 PDT
        1_793_516_400, 1_793_523_600, 1_793_606_400,   // 2026-11-01 00:00 PDT, 02:00 PDT → 01:00 PST, 11-02 00:00 PST
        1_800_000_000, 1_800_043_200,                  // 2027-01-15 00:00 and 12:00 PST
    ]

    static let windows: [QuotaWindow] = [
        .hour, .minute, .rolling(seconds: 600), .day(timeZone: "Europe/Paris"), .month(timeZone: "America/Los_Angeles"),
    ]

    init(index: Int, seed: UInt64, clock: ManualClock) {
        self.index = index
        bucket = "bucket\(index)"
        endpoint = "endpoint\(index)"
        self.clock = clock
        var generator = SeededGenerator(seed: seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
        let anchor = Self.anchors[Int.random(in: 0..<Self.anchors.count, using: &generator)]
        // Whole seconds: the clocked copy reads the same instant the machine is given.
        let offset = Int64.random(in: -7200...7200, using: &generator)
        clock.set(to: Date(timeIntervalSince1970: TimeInterval(anchor + offset)))
        configuredLimit = [1, 10, 100, 10_000][Int.random(in: 0..<4, using: &generator)]
        random = generator
    }

    /// Runs the scenario's steps, and returns the first difference between the function and the
    /// machine, if any.
    mutating func run(
        store: PostgresStore, connection: PostgresConnection, throttle: (requests: Int, windowMs: Int)
    ) async throws -> String? {
        _ = try await connection.query("""
            INSERT INTO throttle_limits (endpoint, request_limit, window_ms, updated_at_ms, admitted_at_ms)
            VALUES (\(endpoint), \(throttle.requests), \(throttle.windowMs), 0, '{}')
            """, logger: PostgresTestDatabase.quietLogger).collect()
        // Most scenarios start with a bucket row (the function's usual case); some without.
        if Int.random(in: 0..<10, using: &random) < 8 { try await reserve(store, window: .pacificDay, pacing: nil) }
        for _ in 0..<Int.random(in: 3...8, using: &random) {
            let roll = Int.random(in: 0..<100, using: &random)
            switch roll {
            case 0..<35:
                if let mismatch = try await batch(store: store, connection: connection, throttle: throttle) {
                    return mismatch
                }
            case 35..<50:
                let window = Int.random(in: 0..<10, using: &random) < 6
                    ? QuotaWindow.pacificDay : Self.windows[Int.random(in: 0..<Self.windows.count, using: &random)]
                let pacing = Int.random(in: 0..<5, using: &random) == 0 ? QuotaPacing() : nil
                try await reserve(store, window: window, pacing: pacing)
            case 50..<60:
                try await announce(store)
            case 60..<68:
                try await settle(store)
            case 68..<75:
                if let reservation = lastReservation {
                    _ = try await store.refundQuota(reservationID: reservation, at: clock.now(), reason: "test")
                    steps.append("refund \(reservation)")
                }
            case 75..<82:
                let limit: Int? = Int.random(in: 0..<3, using: &random) == 0 ? nil : Int.random(in: 0...200, using: &random)
                _ = try await store.setQuotaLimit(bucket: bucket, limit: limit, configuredLimit: configuredLimit, at: clock.now())
                steps.append("operator limit \(limit.map(String.init) ?? "cleared")")
            case 82..<87:
                configuredLimit = Int.random(in: 0...200, using: &random)
                steps.append("configured limit \(configuredLimit)")
            case 87..<91:
                _ = try await store.markQuotaExhausted(bucket: bucket, configuredLimit: configuredLimit, endpoint: endpoint,
                                                       at: clock.now())
                steps.append("exhausted mark")
            default:
                let seconds = [1, 59, 600, 3600, 10_800][Int.random(in: 0..<5, using: &random)]
                clock.advance(by: .seconds(seconds))
                steps.append("advance \(seconds) s")
            }
        }
        return nil
    }

    private mutating func reserve(_ store: PostgresStore, window: QuotaWindow, pacing: QuotaPacing?) async throws {
        let cost = Int.random(in: 0...max(1, configuredLimit / 4 + 1), using: &random)
        let outcome = try await store.reserveQuota(QuotaReservationRequest(
            bucket: bucket, endpoint: endpoint, cost: cost, configuredLimit: configuredLimit,
            warningPercents: [50, 80], at: clock.now(), window: window, pacing: pacing
        ))
        if case .reserved(let charge) = outcome { lastReservation = charge.reservationID }
        steps.append("reserve \(cost) in \(window)\(pacing == nil ? "" : " paced"): \(Self.describe(outcome))")
    }

    private mutating func announce(_ store: PostgresStore) async throws {
        let remaining = Int.random(in: 0...(configuredLimit + 10), using: &random)
        let reset: Date? = Bool.random(using: &random)
            ? nil : clock.now().addingTimeInterval(TimeInterval(Int.random(in: 1...200_000, using: &random)))
        let outcome = try await store.recordQuotaAnnouncement(QuotaAnnouncement(
            bucket: bucket, endpoint: endpoint, configuredLimit: configuredLimit, window: .pacificDay,
            remaining: remaining, resetsAt: reset, at: clock.now()
        ))
        steps.append("announced \(remaining) left, reset \(reset.map { "\($0.timeIntervalSince1970)" } ?? "none"): "
                     + "followed \(outcome.unitsFollowed), moved \(outcome.movedReset)")
    }

    private mutating func settle(_ store: PostgresStore) async throws {
        guard let reservation = lastReservation else { return }
        let actual = Int.random(in: 0...(configuredLimit * 2 + 1), using: &random)
        let outcome = try await store.settleQuotaCost(reservationID: reservation, bucket: bucket, actualUnits: actual,
                                                      at: clock.now(), detail: nil)
        steps.append("settle \(reservation) at \(actual): \(outcome)")
    }

    /// Puts a batch of costs to the function and to the machine, from the same rows at the same
    /// instant, and compares verdicts and rows; what the function left is then reserved by the
    /// full path, as the store does.
    private mutating func batch(
        store: PostgresStore, connection: PostgresConnection, throttle: (requests: Int, windowMs: Int)
    ) async throws -> String? {
        let now = clock.now()
        let nowMs = now.millisecondsSince1970
        let costs = (0..<Int.random(in: 1...4, using: &random)).map { _ in
            Int.random(in: 0..<12, using: &random) == 0
                ? Int.random(in: 0...(configuredLimit + 5), using: &random)
                : Int.random(in: 1...max(1, configuredLimit / 5), using: &random)
        }
        let askedLimit = Int.random(in: 0..<10, using: &random) == 0 ? Int.random(in: 0...200, using: &random) : configuredLimit
        let requests = Int.random(in: 0..<15, using: &random) == 0 ? throttle.requests + 1 : throttle.requests
        let warnings = [50, 80, 95, 100, 0, 150].filter { _ in Bool.random(using: &random) }
        let before = try await AdmissionRows.read(connection, bucket: bucket, endpoint: endpoint, now: now,
                                                  configuredLimit: askedLimit)
        let expected = AdmissionRows.machinePrefix(
            before, endpoint: endpoint, costs: costs, configuredLimit: askedLimit, requests: requests,
            windowMs: throttle.windowMs, warnings: warnings, now: now
        )
        _ = try await connection.query(
            "SELECT set_config('tollgate.test_now', \(String(nowMs)), false)", logger: PostgresTestDatabase.quietLogger
        ).collect()
        let answers = try await connection.query("""
            SELECT outcome, reservation_id, pacific_date, used_after, daily_limit, warnings
            FROM tollgate_admit_batch_at(\(endpoint), \(requests), \(throttle.windowMs), \(bucket), \(endpoint),
                                         \(costs), \(askedLimit), \(warnings))
            """, logger: PostgresTestDatabase.quietLogger).collect()
        let context = "batch \(costs) limit \(askedLimit) throttle \(requests) warnings \(warnings) at \(nowMs)"
        var reservations: [Int64] = []
        for (position, row) in answers.enumerated() {
            let (outcome, id, key, usedAfter, limit, crossed) = try row.decode(
                (String, Int64?, String?, Int?, Int?, [Int]?).self
            )
            if position < expected.count {
                let machine = expected[position]
                guard outcome == "admitted", key == machine.key, usedAfter == machine.usedAfter, limit == machine.limit,
                      crossed == machine.warningsCrossed, let id
                else {
                    return mismatch(context, "cost #\(position + 1): the machine admits \(machine), the function says "
                                    + "\(outcome) \(key ?? "-") used \(usedAfter.map(String.init) ?? "-") "
                                    + "limit \(limit.map(String.init) ?? "-") warnings \(crossed ?? [])", before)
                }
                reservations.append(id)
            } else if outcome != "fallback" {
                return mismatch(context, "cost #\(position + 1): the machine does not admit it in one statement, "
                                + "the function says \(outcome) used \(usedAfter.map(String.init) ?? "-")", before)
            }
        }
        admittedByFunction += reservations.count
        declinedByFunction += costs.count - reservations.count
        let after = try await AdmissionRows.read(connection, bucket: bucket, endpoint: endpoint, now: now,
                                                 configuredLimit: askedLimit)
        let wanted = AdmissionRows.applying(expected, to: before, windowMs: throttle.windowMs, now: now)
        if after.ledger != wanted.ledger {
            return mismatch(context, "rows after: the function wrote \(after.ledger), the machine's writes make \(wanted.ledger)",
                            before)
        }
        let charged = try await AdmissionRows.chargeEvents(connection, ids: reservations)
        let wantedCharges = expected.map { AdmissionRows.ChargeEvent(key: $0.key, endpoint: endpoint, units: $0.cost) }
        if charged != wantedCharges {
            return mismatch(context, "charge events: the function wrote \(charged), the machine's writes are \(wantedCharges)",
                            before)
        }
        steps.append("\(context): function admitted \(reservations.count)")
        // What the function declined goes through the full path, as PostgresStore.admit does.
        for cost in costs.dropFirst(expected.count) {
            let outcome = try? await store.reserveQuota(QuotaReservationRequest(
                bucket: bucket, endpoint: endpoint, cost: cost, configuredLimit: askedLimit, warningPercents: warnings,
                at: now
            ))
            if case .reserved(let charge) = outcome { lastReservation = charge.reservationID }
        }
        return nil
    }

    private func mismatch(_ context: String, _ what: String, _ before: AdmissionRows) -> String {
        "scenario \(index): \(context): \(what)\n  rows before: \(before)\n  steps: \(steps.joined(separator: "; "))"
    }

    private static func describe(_ outcome: QuotaReservationOutcome) -> String {
        switch outcome {
        case .reserved(let charge): "reserved \(charge.reservationID), used \(charge.bucketUnitsUsed)/\(charge.limit)"
        case .refused(let refusal): "refused \(refusal.reason), used \(refusal.bucketUnitsUsed)/\(refusal.limit)"
        }
    }
}
