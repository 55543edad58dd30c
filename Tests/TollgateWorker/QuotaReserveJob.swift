import Foundation
import Tollgate

/// `quota-reserve PATH NOW_MS LIMIT COST COUNT REFUND_EVERY`: reserves `COUNT` times an endpoint
/// that costs `COST` in a bucket of `LIMIT` units, at the fixed time `NOW_MS`; refunds every
/// `REFUND_EVERY`-th granted reservation (0: none). Prints `granted G refused R refunded F`.
enum QuotaReserveJob {
    static let bucket = "shared"
    static let endpoint = "work.list"

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 6, let nowMs = Int64(arguments[1]), let limit = Int(arguments[2]),
              let cost = Int(arguments[3]), let count = Int(arguments[4]), let refundEvery = Int(arguments[5])
        else {
            throw StoreRefusal.invalidArgument("quota-reserve PATH NOW_MS LIMIT COST COUNT REFUND_EVERY")
        }
        let store = try SQLiteStore(path: arguments[0])
        let ledger = try QuotaLedger(
            storage: store,
            configuration: QuotaConfiguration(
                bucketLimits: [bucket: limit],
                endpointCosts: [endpoint: .init(bucket: bucket, units: cost)],
                defaultBucket: bucket
            ),
            clock: ManualClock(now: Date(timeIntervalSince1970: TimeInterval(nowMs) / 1000))
        )
        var granted = 0
        var refused = 0
        var refunded = 0
        for _ in 0..<count {
            do {
                let reservation = try await ledger.reserve(endpoint: endpoint)
                granted += 1
                if refundEvery > 0, granted % refundEvery == 0 {
                    if case .refunded = try await ledger.refund(reservation, reason: "worker refund") { refunded += 1 }
                }
            } catch TollgateError.quotaExceeded {
                refused += 1
            }
        }
        print("granted \(granted) refused \(refused) refunded \(refunded)")
    }
}
