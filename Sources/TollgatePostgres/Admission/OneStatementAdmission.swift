import Foundation
import PostgresNIO
import TollgateStore

/// What `tollgate_admit_batch` reports for one admitted cost: what the client needs to build the
/// same report as the full transaction's.
struct OneStatementAdmission: Sendable {
    /// Admissions that may share one call of the function: everything but the cost is equal.
    struct Kind: Hashable, Sendable {
        let endpoint: String
        let requests: Int
        let windowMilliseconds: Int
        let bucket: String
        let chargedEndpoint: String
        let configuredLimit: Int
        let warningPercents: [Int]

        init(_ request: AdmissionRequest) {
            endpoint = request.endpoint
            requests = request.throttleLimit.requests
            windowMilliseconds = Int(request.throttleLimit.windowMilliseconds)
            bucket = request.quota.bucket
            chargedEndpoint = request.quota.endpoint
            configuredLimit = request.quota.configuredLimit
            warningPercents = request.quota.warningPercents
        }
    }

    /// The database's clock when the throttle counted the request.
    let now: Date
    /// The requests in the endpoint's window, this one included.
    let throttleCount: Int
    /// The charge's event, which a refund names.
    let reservationID: Int64
    let day: PacificDay
    /// The bucket's units used today, this charge included.
    let usedAfter: Int
    let limit: Int
    let warningsCrossed: [Int]
    /// The endpoint's circuit (closed), or nil when it has never been used.
    let circuit: CircuitRecord?

    /// Reads one row of the function's answer.
    /// - Returns: Nil for a cost the full transaction must decide ('fallback').
    /// - Throws: When a column is missing or of another type.
    static func decode(_ row: PostgresRow) throws -> OneStatementAdmission? {
        let columns = row.makeRandomAccess()
        guard try columns["outcome"].decode(String.self) == "admitted" else { return nil }
        return OneStatementAdmission(
            now: PostgresStore.date(milliseconds: try columns["now_ms"].decode(Int.self)),
            throttleCount: try columns["throttle_count"].decode(Int.self),
            reservationID: Int64(try columns["reservation_id"].decode(Int.self)),
            day: try PostgresStore.pacificDay(try columns["pacific_date"].decode(String.self)),
            usedAfter: try columns["used_after"].decode(Int.self),
            limit: PostgresQuotaRules.clamped(try columns["daily_limit"].decode(Int.self)),
            warningsCrossed: try columns["warnings"].decode([Int].self),
            circuit: try columns["endpoint"].decode(String?.self) == nil ? nil : try PostgresStore.circuitRecord(row)
        )
    }
}
