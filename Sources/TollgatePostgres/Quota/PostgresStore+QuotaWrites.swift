import Foundation
import Logging
import PostgresNIO
import TollgateCore

/// The quota machine's writes (``QuotaWrite``) in PostgreSQL's SQL: the only place the ledger's
/// tables change after a decision, and nothing here decides. A charge keeps the conditional upsert
/// of its key's `quota_bucket_days` row (`units + cost <= ceiling`) as the backstop against a
/// one-statement admission that charged the key between the read and the write.
extension PostgresStore {
    /// What writing a decision's charges did.
    enum AppliedCharges {
        /// Charged: the id of the `charge` event.
        case charged(Int64)
        /// The key's day row refused the charge (its ceiling): nothing was written; the window's units now.
        case refusedByCeiling(used: Int)
    }

    /// Creates a bucket's row, as ``QuotaStateMachine/synchronize(_:configuredLimit:window:now:)``
    /// says for a bucket with none.
    /// - Returns: False, having written nothing, when another machine created it meanwhile.
    func applyCreation(
        _ connection: PostgresConnection, _ writes: [QuotaWrite], bucket: String, nowMs: Int64
    ) async throws -> Bool {
        for write in writes {
            guard case .createBucket(let limit, let specification) = write else { continue }
            let inserted = try await connection.rows("""
                INSERT INTO quota_buckets (bucket, daily_limit, limit_source, updated_at_ms, window_spec)
                VALUES (\(bucket), \(limit), 'configuration', \(nowMs), \(specification))
                ON CONFLICT (bucket) DO NOTHING
                RETURNING bucket
                """, logger: logger)
            if inserted.isEmpty { return false }
        }
        try await apply(connection, writes.filter { if case .createBucket = $0 { false } else { true } },
                        bucket: bucket, nowMs: nowMs, limit: 0)
        return true
    }

    /// Writes a decision's charges: the `charge` event, the totals, and the pacing slot and
    /// warning that go with them.
    /// - Parameters:
    ///   - limit: The limit in force, the ceiling the key's day row is charged under.
    ///   - reservationID: For a further bucket of a reservation: the reservation its charge is linked to.
    ///   - detail: What the `charge` event says of itself (a batch's count of IDs); for a further
    ///     bucket, the reservation it goes with.
    /// - Returns: The charge's id, or the ceiling's refusal (nothing written).
    func applyCharges(
        _ connection: PostgresConnection, _ writes: [QuotaWrite], bucket: String, nowMs: Int64, limit: Int,
        reservationID: Int64?, detail: String? = nil
    ) async throws -> AppliedCharges {
        var chargeID: Int64?
        for write in writes {
            switch write {
            case .charge(let key, let endpoint, let units):
                let detail = detail ?? reservationID.map { "charged with reservation \($0)" }
                guard let charged = try await connection.firstRow("""
                    WITH charged AS (
                        INSERT INTO quota_bucket_days AS d (pacific_date, bucket, units, ceiling)
                        VALUES (\(key), \(bucket), \(units), \(limit))
                        ON CONFLICT (pacific_date, bucket) DO UPDATE
                            SET units = d.units + excluded.units, ceiling = excluded.ceiling
                            WHERE d.units + excluded.units <= excluded.ceiling
                        RETURNING d.units
                    ), event AS (
                        INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
                        SELECT \(nowMs), \(key), \(bucket), \(endpoint), 'charge', \(units), \(reservationID), \(detail)
                        FROM charged
                        RETURNING id
                    ), usage AS (
                        INSERT INTO quota_usage AS u (pacific_date, bucket, endpoint, units, calls)
                        SELECT \(key), \(bucket), \(endpoint), \(units), 1 FROM charged
                        ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE
                            SET units = u.units + excluded.units, calls = u.calls + 1
                        RETURNING u.units
                    )
                    SELECT (SELECT id FROM event) AS id, (SELECT count(*) FROM usage) AS usage_rows
                    """, logger: logger)?.makeRandomAccess() else {
                    throw StoreRefusal.invalidArgument("the quota charge of \(endpoint) in \(bucket) returned no row")
                }
                guard let id = try charged["id"].decode(Int64?.self) else {
                    let period = QuotaPeriod(key: key, start: .distantPast, end: .distantFuture)
                    return .refusedByCeiling(used: try await windowUnits(connection, bucket: bucket, in: period))
                }
                chargeID = id
            default:
                try await apply(connection, [write], bucket: bucket, nowMs: nowMs, limit: limit)
            }
        }
        guard let chargeID else {
            throw StoreRefusal.invalidArgument("the quota charge in \(bucket) wrote no event")
        }
        return .charged(chargeID)
    }

    /// Makes `writes`, in order, for `bucket`; a charge goes through ``applyCharges(_:_:bucket:nowMs:limit:reservationID:)``.
    /// - Parameters:
    ///   - nowMs: The time of the operation, stamped on events and rows.
    ///   - limit: The limit in force: the ceiling of a key an announcement takes past it.
    func apply(
        _ connection: PostgresConnection, _ writes: [QuotaWrite], bucket: String, nowMs: Int64, limit: Int
    ) async throws {
        for write in writes {
            switch write {
            case .createBucket(let limit, let specification):
                try await connection.run("""
                    INSERT INTO quota_buckets (bucket, daily_limit, limit_source, updated_at_ms, window_spec)
                    VALUES (\(bucket), \(limit), 'configuration', \(nowMs), \(specification))
                    ON CONFLICT (bucket) DO NOTHING
                    """, logger: logger)
            case .storeLimit(let limit):
                try await connection.run("""
                    UPDATE quota_buckets SET daily_limit = \(limit), updated_at_ms = \(nowMs) WHERE bucket = \(bucket)
                    """, logger: logger)
            case .changeWindow(let specification):
                try await connection.run("""
                    UPDATE quota_buckets SET window_spec = \(specification), announced_key = NULL,
                        announced_reset_ms = NULL, paced_at_ms = NULL, paced_key = NULL, updated_at_ms = \(nowMs)
                    WHERE bucket = \(bucket)
                    """, logger: logger)
            case .noteWindow(let period):
                try await connection.run("""
                    UPDATE quota_buckets SET window_key = \(period.key), window_first_key = \(period.firstKey),
                        window_end_ms = \(period.end.millisecondsSince1970)
                    WHERE bucket = \(bucket)
                    """, logger: logger)
            case .event(let kind, let key, let detail):
                try await connection.run("""
                    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                    VALUES (\(nowMs), \(key), \(bucket), '*', \(kind.rawValue), 0, \(detail))
                    """, logger: logger)
            case .charge:
                switch try await applyCharges(connection, [write], bucket: bucket, nowMs: nowMs, limit: limit,
                                              reservationID: nil) {
                case .charged: break
                case .refusedByCeiling:
                    throw StoreRefusal.invalidArgument("the quota charge in \(bucket) was refused by its day's ceiling")
                }
            case .markPaced(let atMs, let key):
                try await connection.run("""
                    UPDATE quota_buckets SET paced_at_ms = \(atMs), paced_key = \(key) WHERE bucket = \(bucket)
                    """, logger: logger)
            case .recordWarning(let key, let percent):
                // On the key's day row, which the charge holds locked, so no other machine reports it again.
                try await connection.run("""
                    UPDATE quota_bucket_days SET warned_percent = GREATEST(warned_percent, \(percent))
                    WHERE pacific_date = \(key) AND bucket = \(bucket)
                    """, logger: logger)
            case .announceReset(let key, let resetMs):
                try await connection.run("""
                    UPDATE quota_buckets SET announced_key = \(key), announced_reset_ms = \(resetMs) WHERE bucket = \(bucket)
                    """, logger: logger)
            case .followAnnouncement(let key, let units, let detail):
                // Followed down to at most the limit; an operator's limit lowered since the key's last
                // charge may still leave the row above the ceiling it was charged under.
                try await connection.run("""
                    WITH event AS (
                        INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                        VALUES (\(nowMs), \(key), \(bucket), '*', 'announced', \(units), \(detail))
                    ), usage AS (
                        INSERT INTO quota_usage AS u (pacific_date, bucket, endpoint, units, calls)
                        VALUES (\(key), \(bucket), '*', \(units), 0)
                        ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE SET units = u.units + excluded.units
                    )
                    INSERT INTO quota_bucket_days AS d (pacific_date, bucket, units, ceiling)
                    VALUES (\(key), \(bucket), \(units), GREATEST(\(limit), \(units)))
                    ON CONFLICT (pacific_date, bucket) DO UPDATE
                        SET units = d.units + excluded.units, ceiling = GREATEST(d.ceiling, d.units + excluded.units)
                    """, logger: logger)
            case .markExhausted(let key, let untilMs, let endpoint, let detail):
                try await connection.run("""
                    WITH marked AS (
                        UPDATE quota_buckets SET exhausted_until_ms = \(untilMs), updated_at_ms = \(nowMs)
                        WHERE bucket = \(bucket)
                    )
                    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                    VALUES (\(nowMs), \(key), \(bucket), \(endpoint), 'exhausted', 0, \(detail))
                    """, logger: logger)
            }
        }
    }
}
