import Foundation
import Logging
import NIOSSL
import PostgresNIO
import TollgateCore

/// The store over PostgreSQL, for a fleet of machines that share one API key: every machine that
/// opens the same database shares one quota ledger, one set of circuits and one throttle window.
///
/// It conforms to the same store protocols as `SQLiteStore`, so the services work over it
/// unchanged. Each operation is one transaction on a connection from a `PostgresClient` pool; the
/// gate's decisions are single statements (the quota's check-and-charge is one conditional
/// upsert), so machines never read-then-write a budget.
///
/// ## Time
/// The database's clock decides every "now": the Pacific day a charge lands on, the end of an
/// exhausted mark, windows and open-until times (`now()`, `AT TIME ZONE 'America/Los_Angeles'`).
/// The `at:` dates the store protocols pass are not used to decide them, so machines whose clocks
/// disagree still agree. Operations that name a day or a window explicitly (``resetQuotaDay(_:bucket:at:)``,
/// ``quotaUsage(on:)``, ``quotaBurn(since:until:)``) use what they are given.
///
/// ## Lifecycle
/// Opening connects once to check the server and migrate the schema, then starts the pool.
/// Call ``shutdown()`` when done: it closes every connection.
public final class PostgresStore: Sendable {
    /// How the store connects and migrates.
    public struct Configuration: Sendable {
        /// The most connections the pool opens to the server. Each machine of a fleet has its own
        /// pool: keep the sum below the server's `max_connections`.
        public var maximumConnections: Int
        /// How long to wait for the server to accept a connection before giving up.
        public var connectTimeout: Duration
        /// How long an operation waits for a pooled connection before it fails with
        /// ``PostgresStoreError/unreachable(server:reason:)``, so a server that went away is
        /// reported in seconds (and the ledger's failure policy applies) rather than after the
        /// pool's own minute.
        public var connectionWait: Duration
        /// The migrations to apply; the library's own by default (tests pass others).
        public var migrations: [Migration]
        /// Whether opening applies pending migrations (the default). When false, opening writes
        /// nothing and refuses a database whose schema is not current with
        /// `StoreRefusal.migrationsPending`: for tools that only look, which must not migrate a
        /// fleet's database behind its operator's back.
        public var migratesOnOpen: Bool

        /// Creates a configuration.
        /// - Parameters:
        ///   - maximumConnections: The most connections the pool opens.
        ///   - connectTimeout: How long to wait for the server to accept a connection.
        ///   - connectionWait: How long an operation waits for a pooled connection.
        ///   - migrations: The migrations to apply.
        ///   - migratesOnOpen: Whether opening applies pending migrations.
        public init(maximumConnections: Int = 20, connectTimeout: Duration = .seconds(10),
                    connectionWait: Duration = .seconds(10), migrations: [Migration] = PostgresMigrations.all,
                    migratesOnOpen: Bool = true) {
            self.maximumConnections = maximumConnections
            self.connectTimeout = connectTimeout
            self.connectionWait = connectionWait
            self.migrations = migrations
            self.migratesOnOpen = migratesOnOpen
        }
    }

    /// The server, user and database the store is connected to.
    public let location: PostgresLocation
    /// The migrations this store applied when it opened, oldest first: empty when the database
    /// was already current (or another machine migrated it first).
    public let migrationsAppliedAtOpen: [Migration]
    let client: PostgresClient
    let logger: Logger
    let connectionWait: Duration
    private let runTask: Task<Void, Never>
    /// The usual admissions of one kind that arrive while one is on its way share the next statement.
    let admissionBatches = CallBatcher<OneStatementAdmission.Kind, Int, OneStatementAdmission?>(maximumBatch: 64)
    /// Tests only: the clock the quota's window operations read instead of the database's (nil, the
    /// default, everywhere else). Those operations compute their window in Swift from one "now" read
    /// in their transaction (``windowNow(_:)``), so a test can stand that "now" at the end of an hour
    /// without waiting an hour, as it passes `at` to `SQLiteStore`. The Pacific day decided in SQL,
    /// the circuit and the throttle keep the database's clock.
    let windowClock: (any TollgateClock)?

    /// Opens the store at a `postgresql://` or `postgres://` URL: connects, migrates the schema,
    /// and starts the connection pool.
    /// - Parameters:
    ///   - url: The server and database, such as `postgresql://tollgate@db.internal:5432/tollgate`.
    ///   - configuration: The pool's size, the connect timeout and the migrations.
    ///   - logger: Where the store and the driver log; the task's current logger by default.
    /// - Throws: ``PostgresStoreError/invalidURL(_:reason:)`` for a URL it cannot read;
    ///   ``PostgresStoreError/unreachable(server:reason:)`` when no connection can be made (the error
    ///   names `host:port` and what to check); `StoreRefusal.databaseIsNewer` or
    ///   `StoreRefusal.migrationChecksumMismatch` when the database's schema history is newer than the
    ///   library's or differs from it (nothing is written then); `StoreRefusal.migrationsPending` when
    ///   ``Configuration/migratesOnOpen`` is false and the schema is not current.
    public convenience init(
        url: String, configuration: Configuration = Configuration(), logger: Logger = Logger.current
    ) async throws {
        try await self.init(location: PostgresLocation(url: url), configuration: configuration, logger: logger)
    }

    /// Opens the store at a location: connects, migrates the schema, and starts the connection pool.
    /// - Parameters:
    ///   - location: The server, user and database.
    ///   - configuration: The pool's size, the connect timeout and the migrations.
    ///   - logger: Where the store and the driver log; the task's current logger by default.
    /// - Throws: ``PostgresStoreError/unreachable(server:reason:)`` when no connection can be made;
    ///   `StoreRefusal.databaseIsNewer` or `StoreRefusal.migrationChecksumMismatch` when the database's
    ///   schema history is newer than the library's or differs from it (nothing is written then);
    ///   `StoreRefusal.migrationsPending` when ``Configuration/migratesOnOpen`` is false and the schema
    ///   is not current.
    public convenience init(
        location: PostgresLocation, configuration: Configuration = Configuration(), logger: Logger = Logger.current
    ) async throws {
        try await self.init(location: location, configuration: configuration, logger: logger, windowClock: nil)
    }

    /// Opens the store with the clock its window operations read (tests only: see ``windowClock``).
    init(
        location: PostgresLocation, configuration: Configuration, logger: Logger, windowClock: (any TollgateClock)?
    ) async throws {
        self.windowClock = windowClock
        self.location = location
        self.logger = logger
        self.connectionWait = configuration.connectionWait
        // The pool retries a failing server quietly, and its waiting requests only fail long after,
        // without the cause: one plain connection first gives a prompt error that says why.
        let connection = try await Self.connect(location, timeout: configuration.connectTimeout, logger: logger)
        do {
            let migrator = PostgresMigrator(migrations: configuration.migrations, location: location)
            if configuration.migratesOnOpen {
                migrationsAppliedAtOpen = try await migrator.migrate(connection, logger: logger)
            } else {
                try await migrator.requireCurrent(connection, logger: logger)
                migrationsAppliedAtOpen = []
            }
            for migration in migrationsAppliedAtOpen {
                logger.debug("applied migration", metadata: [
                    "version": "\(migration.version)", "name": "\(migration.name)", "server": "\(location)",
                ])
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()

        var clientConfiguration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: try Self.clientTLS(location.tlsMode)
        )
        clientConfiguration.options.maximumConnections = max(1, configuration.maximumConnections)
        clientConfiguration.options.connectTimeout = configuration.connectTimeout
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        self.client = client
        self.runTask = Task { await client.run() }
    }

    deinit {
        runTask.cancel()
    }

    /// Closes the pool's connections and waits until they are closed. Operations after it fail.
    public func shutdown() async {
        runTask.cancel()
        await runTask.value
    }

    /// Every migration the library knows, with when it was applied to the database at `url`,
    /// read without applying anything.
    /// - Parameters:
    ///   - url: The server and database.
    ///   - configuration: The connect timeout and the migrations to list.
    ///   - logger: Where the driver logs.
    /// - Returns: One status per migration, oldest first.
    /// - Throws: ``PostgresStoreError`` when the URL is wrong or the server unreachable;
    ///   `StoreRefusal.databaseIsNewer` or `StoreRefusal.migrationChecksumMismatch` for a history this
    ///   library does not know.
    public static func migrationStatus(
        url: String, configuration: Configuration = Configuration(), logger: Logger = Logger.current
    ) async throws -> [MigrationStatus] {
        let location = try PostgresLocation(url: url)
        let connection = try await connect(location, timeout: configuration.connectTimeout, logger: logger)
        let statuses: [MigrationStatus]
        do {
            statuses = try await PostgresMigrator(migrations: configuration.migrations, location: location)
                .statuses(connection, logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
        return statuses
    }

    private static func connect(
        _ location: PostgresLocation, timeout: Duration, logger: Logger
    ) async throws -> PostgresConnection {
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: try connectionTLS(location.tlsMode)
        )
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        configuration.options.connectTimeout = .milliseconds(max(1, milliseconds))
        do {
            return try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        } catch {
            throw PostgresStoreError.unreachable(server: "\(location)", reason: PostgresErrorMapping.reason(of: error))
        }
    }

    private static func clientTLS(_ mode: PostgresLocation.TLSMode) throws -> PostgresClient.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
    }

    private static func connectionTLS(_ mode: PostgresLocation.TLSMode) throws -> PostgresConnection.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
    }
}
