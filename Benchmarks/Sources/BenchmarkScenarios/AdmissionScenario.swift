import Foundation
import Tollgate
import TollgateSQLite

/// The gate's admission as its store operation: circuit check, throttle and quota reservation in
/// one `BEGIN IMMEDIATE` transaction (`SQLiteStore.admit`), and the settlement that follows an
/// answer (`SQLiteStore.settleAttempt`).
public struct AdmissionScenario: Sendable {
    public let store: SQLiteStore
    public let endpoint: String
    let policy = CircuitPolicy()
    /// Never reached at benchmark rates. The window is short so it holds about as many recorded
    /// requests (tens) as a real per-minute limit does; a one-minute window at tens of thousands of
    /// admissions a second would measure counting those rows instead of admission.
    let limit = ThrottleLimit(requests: 1_000_000, per: .milliseconds(2))

    /// Opens (or creates) the store at `path`.
    /// - Parameters:
    ///   - path: The database file.
    ///   - endpoint: The endpoint every admission is for.
    /// - Throws: What opening the store throws.
    public init(path: String, endpoint: String = "videos.list") throws {
        store = try SQLiteStore(path: path)
        self.endpoint = endpoint
    }

    /// One admission, as the gate asks it for one attempt.
    /// - Returns: The reservation's id.
    /// - Throws: `BenchmarkFailure` when it was not admitted; store errors.
    @discardableResult
    public func admit() async throws -> Int64 {
        let now = Date()
        let outcome = try await store.admit(AdmissionRequest(
            endpoint: endpoint, circuitPolicy: policy, probeToken: CircuitBreaker.newProbeToken(),
            throttleLimit: limit,
            quota: QuotaReservationRequest(bucket: "youtube", endpoint: endpoint, cost: 1,
                                           configuredLimit: 1_000_000_000, at: now)
        ))
        guard case .admitted(_, _, let charge) = outcome else {
            throw BenchmarkFailure("admission refused: \(outcome)")
        }
        return charge.reservationID
    }

    /// The settlement of a successful answer, refunding the charge as a 304 would.
    /// - Parameter reservationID: The charge to refund.
    /// - Throws: Store errors.
    public func settle(reservationID: Int64) async throws {
        _ = try await store.settleAttempt(AttemptSettlement(
            endpoint: endpoint, outcome: .success, probeToken: nil, circuitPolicy: policy,
            refundReservationID: reservationID, refundReason: "304 Not Modified", at: Date()
        ))
    }
}

/// A benchmark that could not measure what it meant to.
public struct BenchmarkFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
