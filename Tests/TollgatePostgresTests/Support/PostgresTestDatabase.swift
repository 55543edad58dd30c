import Foundation
import Logging
import PostgresNIO
import TollgateCore
import TollgatePostgres

/// A fresh database per test on the server named by `TOLLGATE_POSTGRES_URL`, dropped afterwards,
/// so tests never see each other's rows and can run in parallel.
///
/// Scripts/postgres-cluster.sh starts a throwaway server and prints a URL to export; .ci/run does
/// both. Without the variable, the PostgreSQL tests are skipped (see `PostgresAvailabilityTests`).
struct PostgresTestDatabase: Sendable {
    static let environmentVariable = "TOLLGATE_POSTGRES_URL"

    static var serverURL: String? {
        ProcessInfo.processInfo.environment[environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    static var isConfigured: Bool { serverURL != nil }

    /// The test database's URL.
    let url: String
    let location: PostgresLocation
    private let admin: PostgresLocation

    /// Creates `tollgate_test_<random>` on the server.
    static func create() async throws -> PostgresTestDatabase {
        guard let serverURL else { throw Unconfigured() }
        let admin = try PostgresLocation(url: serverURL)
        let name = "tollgate_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try await execute("CREATE DATABASE \(name)", on: admin)
        var location = admin
        location.database = String(name)
        return PostgresTestDatabase(url: url(of: location), location: location, admin: admin)
    }

    /// Runs `body` with a fresh database, and drops it afterwards whatever `body` did.
    static func with<Result: Sendable>(_ body: (PostgresTestDatabase) async throws -> Result) async throws -> Result {
        let database = try await create()
        do {
            let result = try await body(database)
            try await database.drop()
            return result
        } catch {
            try? await database.drop()
            throw error
        }
    }

    /// Runs `body` with a store opened on a fresh database, shut down and dropped afterwards.
    static func withStore<Result: Sendable>(
        configuration: PostgresStore.Configuration = .init(),
        _ body: (PostgresStore) async throws -> Result
    ) async throws -> Result {
        try await with { database in
            let store = try await PostgresStore(url: database.url, configuration: configuration, logger: quietLogger)
            do {
                let result = try await body(store)
                await store.shutdown()
                return result
            } catch {
                await store.shutdown()
                throw error
            }
        }
    }

    func drop() async throws {
        // FORCE: a connection a failed test left open must not keep the database alive.
        try await Self.execute("DROP DATABASE IF EXISTS \(location.database) WITH (FORCE)", on: admin)
    }

    /// Runs one statement on this test database, outside any store (to plant or read raw rows).
    func execute(_ sql: String) async throws {
        try await Self.execute(sql, on: location)
    }

    /// The first column of the first row of a query on this test database, as an Int.
    func intValue(_ sql: String) async throws -> Int? {
        try await Self.intValue(sql, on: location)
    }

    /// The first column of the first row of a query on any database, as an Int.
    static func intValue(_ sql: String, on location: PostgresLocation) async throws -> Int? {
        try await withConnection(to: location) { connection in
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.quietLogger) {
                return try row.decode(Int?.self)
            }
            return nil
        }
    }

    /// Runs `body` on one connection to this test database, closed afterwards (for a test that
    /// sends many statements, or needs a session setting to hold across them).
    func withConnection<Result: Sendable>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        try await Self.withConnection(to: location, body)
    }

    /// The first column of the first row of a query on this test database, as text.
    func textValue(_ sql: String) async throws -> String? {
        try await Self.withConnection(to: location) { connection in
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.quietLogger) {
                return try row.decode(String?.self)
            }
            return nil
        }
    }

    /// Runs `body` while another session holds a transaction in which `sql` ran (to hold the row
    /// locks it took), and commits that transaction once `body` returns or throws.
    func whileHolding<Result: Sendable>(_ sql: String, _ body: () async throws -> Result) async throws -> Result {
        try await Self.withConnection(to: location) { connection in
            _ = try await connection.query("BEGIN", logger: Self.quietLogger)
            _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.quietLogger)
            let result: Result
            do {
                result = try await body()
            } catch {
                _ = try? await connection.query("COMMIT", logger: Self.quietLogger)
                throw error
            }
            _ = try await connection.query("COMMIT", logger: Self.quietLogger)
            return result
        }
    }

    /// The payload of the first notification on `channel` after `action`, or nil when none
    /// arrives within 5 seconds.
    func firstNotification(
        on channel: String, after action: @escaping @Sendable () async throws -> Void
    ) async throws -> String? {
        let location = self.location
        return try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                try await Self.withConnection(to: location) { connection in
                    try await connection.listen(on: channel) { notifications in
                        try await action()
                        for try await notification in notifications { return notification.payload }
                        return nil
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(5))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    static let quietLogger = Logger(label: "tollgate.postgres.tests") { _ in SwiftLogNoOpLogHandler() }

    private static func execute(_ sql: String, on location: PostgresLocation) async throws {
        try await withConnection(to: location) { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: quietLogger)
        }
    }

    private static func withConnection<Result: Sendable>(
        to location: PostgresLocation, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: .disable
        )
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: quietLogger)
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    private static func url(of location: PostgresLocation) -> String {
        var components = URLComponents()
        components.scheme = "postgresql"
        components.user = location.username
        components.password = location.password
        components.host = location.host
        components.port = location.port
        components.path = "/" + location.database
        return components.string ?? ""
    }

    struct Unconfigured: Error, CustomStringConvertible {
        var description: String { "\(PostgresTestDatabase.environmentVariable) is not set" }
    }
}
