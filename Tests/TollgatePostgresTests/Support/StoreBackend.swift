import Synchronization
import Foundation
import Testing
// @testable for PostgresStore's window clock, the test-only stand-in for the database's now.
@testable import TollgatePostgres
import TollgateCore
import TollgateSQLite
import TollgateTestSupport

/// What both stores implement, as the conformance tests use them.
typealias ConformingStore = GateStorage & MaintenanceStorage & DashboardSnapshotStorage & QuotaTimelineStorage

/// The stores a conformance test runs against: SQLite always, PostgreSQL when
/// `TOLLGATE_POSTGRES_URL` names a server.
enum StoreBackend: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static var available: [StoreBackend] {
        PostgresTestDatabase.isConfigured ? [.sqlite, .postgres] : [.sqlite]
    }

    var testDescription: String { rawValue }

    /// Runs `body` with one store on a fresh database; with `time`, PostgreSQL's clock is the
    /// test's (see ``ConformanceTime``).
    func withStore(time: ConformanceTime? = nil, _ body: (any ConformingStore) async throws -> Void) async throws {
        try await withStores(count: 1, time: time) { stores in try await body(stores[0]) }
    }

    /// Runs `body` with one store on a fresh database whose quota windows are decided at `clock`'s
    /// time: SQLiteStore by the `at` each call passes (pass `clock.now()`), PostgresStore, which
    /// takes no `at`, by reading the clock instead of the database's now where it computes a
    /// window (any window but the Pacific day decided in SQL). So a test stands at 10:59:59 and
    /// moves to 11:00 without waiting, on both stores.
    func withStore(windowClock clock: ManualClock, _ body: (any ConformingStore) async throws -> Void) async throws {
        try await withStores(count: 1, windowClock: clock) { stores in try await body(stores[0]) }
    }

    /// Runs `body` with `count` stores sharing one fresh database: several processes' connections
    /// to one file for SQLite, several machines' pools to one database for PostgreSQL.
    /// - Parameters:
    ///   - clock: For PostgreSQL, the clock its window operations read instead of the
    ///     database's (see ``withStore(windowClock:_:)``); nil for the database's.
    ///   - time: For PostgreSQL, the test's time standing in for the server's `now()` in every
    ///     statement (see ``ConformanceTime``); nil for the server's own.
    func withStores(
        count: Int, windowClock clock: ManualClock? = nil, time: ConformanceTime? = nil,
        _ body: ([any ConformingStore]) async throws -> Void
    ) async throws {
        switch self {
        case .sqlite:
            let directory = try TemporaryDirectory()
            let path = directory.path("tollgate.sqlite")
            let stores = try (0..<count).map { _ in try SQLiteStore(path: path, logger: PostgresTestDatabase.quietLogger) }
            try await body(stores)
        case .postgres:
            try await PostgresTestDatabase.with { database in
                // Before any store connects: a session reads its search_path when it starts.
                try await time?.standIn(for: database)
                var stores: [PostgresStore] = []
                do {
                    for _ in 0..<count {
                        stores.append(try await PostgresStore(
                            location: PostgresLocation(url: database.url), configuration: .init(maximumConnections: 8),
                            logger: PostgresTestDatabase.quietLogger, windowClock: clock
                        ))
                    }
                    try await body(stores)
                } catch {
                    for store in stores { await store.shutdown() }
                    throw error
                }
                for store in stores { await store.shutdown() }
            }
        }
    }
}

/// The time a conformance test stamps its operations with, and how it lets time pass, without
/// waiting on either store. SQLite decides by the time it is given. PostgreSQL decides by the
/// server's `now()` and `clock_timestamp()` (every machine of a fleet agrees on it), so for it the
/// test database gets a schema whose `now()` and `clock_timestamp()` read one row of a table, and a
/// search_path that puts that schema before `pg_catalog`: every statement and PL/pgSQL function of
/// the store, which call both unqualified, reads the test's time, and ``pass(_:)`` moves the row.
final class ConformanceTime: Sendable {
    private let clock = ManualClock(now: Date(timeIntervalSince1970: floor(Date().timeIntervalSince1970)))
    private let server = Mutex<PostgresTestDatabase?>(nil)

    init() {}

    /// The instant to pass as an operation's `at:`.
    func now() -> Date { clock.now() }

    /// Lets `duration` pass, on the server's clock too when it stands in for one.
    func pass(_ duration: Duration) async throws {
        clock.advance(by: duration)
        guard let database = server.withLock({ $0 }) else { return }
        try await database.execute("UPDATE tollgate_test_clock.instant SET at = \(Self.timestamp(clock.now()))")
    }

    /// Makes this time the server's for every session that connects to `database` from now on.
    func standIn(for database: PostgresTestDatabase) async throws {
        for statement in [
            "CREATE SCHEMA tollgate_test_clock",
            "CREATE TABLE tollgate_test_clock.instant (at timestamptz NOT NULL)",
            "INSERT INTO tollgate_test_clock.instant VALUES (\(Self.timestamp(clock.now())))",
            "CREATE FUNCTION tollgate_test_clock.now() RETURNS timestamptz LANGUAGE sql STABLE "
                + "AS $$ SELECT at FROM tollgate_test_clock.instant $$",
            "CREATE FUNCTION tollgate_test_clock.clock_timestamp() RETURNS timestamptz LANGUAGE sql STABLE "
                + "AS $$ SELECT at FROM tollgate_test_clock.instant $$",
            // Tables are still made in public, the first schema; functions not found there are
            // looked up in the clock's schema before pg_catalog, named last to come after it.
            "ALTER DATABASE \(database.location.database) SET search_path = public, tollgate_test_clock, pg_catalog",
        ] {
            try await database.execute(statement)
        }
        server.withLock { $0 = database }
    }

    private static func timestamp(_ date: Date) -> String {
        "'epoch'::timestamptz + \(date.millisecondsSince1970) * interval '1 millisecond'"
    }
}
