import Foundation

/// The quota ledger's operations on the store: each one is one transaction.
///
/// The ledger keeps per-day totals (`quota_usage`) beside an append-only list of events
/// (`quota_events`), and every operation that changes a total appends the event that explains it,
/// in the same transaction: the totals always equal the sum of the events. Days are Pacific days
/// (``PacificDay``), computed from the `at` each operation is given, so a test's clock decides them.
///
/// ``SQLiteStore`` implements it; another backend (PostgreSQL, for fleets) implements the same
/// operations and the quota ledger works over it unchanged.
public protocol QuotaStorage: Sendable {
    /// Checks the bucket's budget for the request's day and, when it can pay, charges it and
    /// appends a `charge` event, atomically across every process that shares the store.
    ///
    /// The bucket's row is created from `configuredLimit` when missing, and follows it when it
    /// changes, unless an operator set the limit.
    /// - Parameter request: The bucket, endpoint, cost, configured limit and time.
    /// - Returns: The charge, or the refusal (nothing written) when the cost exceeds what is left
    ///   or the server said the day's quota is spent.
    /// - Throws: `StoreRefusal.invalidArgument` for a negative cost or limit; `DatabaseError` when SQLite fails.
    func reserveQuota(_ request: QuotaReservationRequest) async throws -> QuotaReservationOutcome

    /// Gives a charge's units back to the day it was charged, with a `refund` event.
    ///
    /// A reservation is refunded at most once: a second refund, from any process, writes nothing.
    /// - Parameters:
    ///   - reservationID: The charge's id (``QuotaCharge/reservationID``).
    ///   - at: The time of the refund.
    ///   - reason: Why, kept in the event's detail, such as `304 Not Modified`.
    /// - Returns: What was refunded, or ``QuotaRefundOutcome/alreadyRefunded``.
    /// - Throws: `StoreRefusal.invalidArgument` when no charge has that id; `DatabaseError` when SQLite fails.
    func refundQuota(reservationID: Int64, at: Date, reason: String?) async throws -> QuotaRefundOutcome

    /// Records the server's word that a bucket's daily quota is spent: every process refuses
    /// reservations in it until the next Pacific midnight. An `exhausted` event records it.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - configuredLimit: The bucket's configured limit, used when its row does not exist yet.
    ///   - endpoint: The endpoint whose answer said so, if any.
    ///   - at: The time of the answer.
    /// - Returns: The mark and whether this call set it.
    /// - Throws: `DatabaseError` when SQLite fails.
    func markQuotaExhausted(bucket: String, configuredLimit: Int, endpoint: String?, at: Date) async throws -> QuotaExhaustion

    /// Follows what the server announced about a bucket: when it says fewer units are left than the
    /// ledger counts in the bucket's window, the ledger adds the difference with an `announced`
    /// event (never the other way: the configured limit stays the ceiling); an announced reset moves
    /// the window's end (``QuotaPeriod/current(in:at:announcedReset:)``).
    /// - Parameter announcement: The bucket, what the server said, and when.
    /// - Returns: What the ledger did.
    /// - Throws: `StoreRefusal.invalidArgument` for a negative remaining count or an invalid limit;
    ///   a storage failure when the database fails.
    func recordQuotaAnnouncement(_ announcement: QuotaAnnouncement) async throws -> QuotaAnnouncementOutcome

    /// Settles a charge at its actual cost, read from its answer: a `settle` event charges the
    /// difference from the estimate (or gives it back) in the charge's window, in one transaction.
    /// The actual cost may take the window past its limit; the bucket then refuses until the window
    /// has room again.
    /// - Parameters:
    ///   - reservationID: The reservation (``QuotaCharge/reservationID``).
    ///   - bucket: The bucket whose charge of that reservation is settled (the reservation's own or
    ///     one of its additional charges).
    ///   - actualUnits: The actual cost, zero or more.
    ///   - at: The time of the answer.
    ///   - detail: Where the cost was read, kept in the event's detail.
    /// - Returns: What was settled, or ``QuotaCostSettlement/alreadySettled``.
    /// - Throws: `StoreRefusal.invalidArgument` when the reservation has no charge in that bucket or
    ///   the cost is out of range; a storage failure when the database fails.
    func settleQuotaCost(
        reservationID: Int64, bucket: String, actualUnits: Int, at: Date, detail: String?
    ) async throws -> QuotaCostSettlement

    /// A bucket's limit, usage and exhaustion in its window at `at`.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - configuredLimit: The configured limit, in force unless an operator set one.
    ///   - window: The bucket's window.
    ///   - at: The time whose window is described.
    /// - Returns: The status; a bucket never charged shows the configured limit and no usage.
    /// - Throws: A storage failure when the database fails.
    func quotaBucketStatus(bucket: String, configuredLimit: Int, window: QuotaWindow, at: Date) async throws -> QuotaBucketStatus

    /// Every bucket the store knows, each in its own window at `at` (the window stored with it).
    /// - Parameter at: The time whose windows are described.
    /// - Returns: One status per bucket, ordered by bucket.
    /// - Throws: A storage failure when the database fails.
    func quotaWindows(at: Date) async throws -> [QuotaBucketStatus]

    /// Every endpoint's usage on a Pacific day, ordered by bucket and endpoint.
    /// - Parameter day: The day.
    /// - Returns: The rows of `quota_usage` for that day.
    /// - Throws: `DatabaseError` when SQLite fails.
    func quotaUsage(on day: PacificDay) async throws -> [QuotaUsage]

    /// Every endpoint's charged calls on a Pacific day that carried a batch, and the IDs they
    /// carried, ordered by bucket and endpoint; endpoints without a batch are left out. An
    /// operator's question, answered from `quota_events` (a scan of the day's charges).
    /// - Parameter day: The day.
    /// - Returns: One row per bucket and endpoint that carried batches.
    /// - Throws: A storage failure when the database fails.
    func quotaBatchUsage(on day: PacificDay) async throws -> [QuotaBatchUsage]

    /// A bucket's limit, usage and exhaustion on the Pacific day of `at`.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - configuredLimit: The configured limit, in force unless an operator set one.
    ///   - at: The time whose Pacific day is described.
    /// - Returns: The status; a bucket never charged shows the configured limit and no usage.
    /// - Throws: `DatabaseError` when SQLite fails.
    func quotaBucketStatus(bucket: String, configuredLimit: Int, at: Date) async throws -> QuotaBucketStatus

    /// Sets a bucket's daily limit as an operator, or hands it back to the configuration, and
    /// appends a `limit` event.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - limit: The new limit, kept across restarts and winning over the configuration; nil to
    ///     follow the configuration again.
    ///   - configuredLimit: The configured limit, in force when `limit` is nil.
    ///   - at: The time of the change.
    /// - Returns: The bucket's status afterwards.
    /// - Throws: `StoreRefusal.invalidArgument` for a negative limit; `DatabaseError` when SQLite fails.
    func setQuotaLimit(bucket: String, limit: Int?, configuredLimit: Int, at: Date) async throws -> QuotaBucketStatus

    /// Gives back all the units a bucket used on a day, with one `reset` event per endpoint: never
    /// a silent delete. Resetting the current day also lifts the server's exhausted mark.
    /// - Parameters:
    ///   - day: The Pacific day.
    ///   - bucket: The bucket.
    ///   - at: The time of the reset.
    /// - Returns: What was cleared.
    /// - Throws: `DatabaseError` when SQLite fails.
    func resetQuotaDay(_ day: PacificDay, bucket: String, at: Date) async throws -> QuotaDayReset

    /// Compares every total with the sum of its events.
    /// - Returns: The keys whose total differs from its events; empty when the ledger is sound.
    /// - Throws: `DatabaseError` when SQLite fails.
    func quotaLedgerDiscrepancies() async throws -> [QuotaLedgerDiscrepancy]

    /// Sets a bucket's count for a day to the provider's own count, with one event for the
    /// difference (never a silent edit).
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - used: The units the provider says were used.
    ///   - configuredLimit: The bucket's configured limit, for a bucket the file has not seen yet.
    ///   - day: The Pacific day.
    ///   - at: The time of the change.
    /// - Returns: What changed.
    /// - Throws: `StoreRefusal.invalidArgument` for a count out of range; `DatabaseError` when SQLite fails.
    func reconcileQuota(
        bucket: String, used: Int, configuredLimit: Int, day: PacificDay, at: Date
    ) async throws -> QuotaReconciliation

    /// Net units charged to each bucket between two instants, for a burn rate.
    /// - Parameters:
    ///   - since: The window's start.
    ///   - until: The window's end.
    /// - Returns: One row per bucket charged in the window.
    /// - Throws: `DatabaseError` when SQLite fails.
    func quotaBurn(since: Date, until: Date) async throws -> [QuotaBurn]

    /// Whether the file has ever charged `endpoint`, on any day.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: True when some day's usage names it.
    /// - Throws: `DatabaseError` when SQLite fails.
    func quotaEndpointCharged(_ endpoint: String) async throws -> Bool
}
