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

    /// Runs `body` with one store on a fresh database.
    func withStore(_ body: (any ConformingStore) async throws -> Void) async throws {
        try await withStores(count: 1) { stores in try await body(stores[0]) }
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
    /// - Parameter clock: For PostgreSQL, the clock its window operations read instead of the
    ///   database's (see ``withStore(windowClock:_:)``); nil for the database's.
    func withStores(
        count: Int, windowClock clock: ManualClock? = nil, _ body: ([any ConformingStore]) async throws -> Void
    ) async throws {
        switch self {
        case .sqlite:
            let directory = try TemporaryDirectory()
            let path = directory.path("tollgate.sqlite")
            let stores = try (0..<count).map { _ in try SQLiteStore(path: path, logger: PostgresTestDatabase.quietLogger) }
            try await body(stores)
        case .postgres:
            try await PostgresTestDatabase.with { database in
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

/// The time a conformance test stamps its operations with, and how it lets time pass. SQLite
/// decides by the time it is given, so there the test steps a manual clock and waits for nothing;
/// PostgreSQL decides by the database server's clock (every process of a fleet agrees on it), which
/// a test cannot step, so there it waits for real.
struct ConformanceTime: Sendable {
    private let clock: ManualClock?

    init(for backend: StoreBackend) {
        clock = backend == .sqlite ? ManualClock(now: Date()) : nil
    }

    /// The instant to pass as an operation's `at:`.
    func now() -> Date { clock?.now() ?? Date() }

    /// Lets `duration` pass: at once on a manual clock, for real on the server's.
    func pass(_ duration: Duration) async throws {
        if let clock { clock.advance(by: duration) } else { try await Task.sleep(for: duration) }
    }
}
