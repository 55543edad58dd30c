import Foundation
import PostgresNIO
import TollgateCore

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

    /// Reads the function's answer: one admission per admitted cost, nil for the others.
    /// - Throws: When a column is missing or of another type.
    static func decode(_ rows: [PostgresRow]) throws -> [OneStatementAdmission?] {
        // The circuit's columns are the same on every row: read once.
        let circuit = try rows.first.flatMap { row in
            try row.makeRandomAccess()[Column.circuitEndpoint.rawValue].decode(String?.self) == nil
                ? nil : try PostgresStore.circuitRecord(row)
        }
        return try rows.map { row in
            // By position: a batch has many rows, and a look-up by name searches the columns.
            let columns = row.makeRandomAccess()
            func column(_ column: Column) -> PostgresCell { columns[column.rawValue] }
            guard try column(.outcome).decode(String.self) == "admitted" else { return nil }
            return OneStatementAdmission(
                now: PostgresStore.date(milliseconds: try column(.nowMs).decode(Int.self)),
                throttleCount: try column(.throttleCount).decode(Int.self),
                reservationID: Int64(try column(.reservationID).decode(Int.self)),
                day: try PostgresStore.pacificDay(try column(.pacificDate).decode(String.self)),
                usedAfter: try column(.usedAfter).decode(Int.self),
                limit: QuotaLimits.clamped(try column(.dailyLimit).decode(Int.self)),
                warningsCrossed: try column(.warnings).decode([Int].self),
                circuit: circuit
            )
        }
    }

    /// The positions of `tollgate_admit_batch`'s columns (migration 0003).
    private enum Column: Int {
        case outcome, nowMs, throttleCount, reservationID, pacificDate, usedAfter, dailyLimit, warnings, circuitEndpoint
    }
}
