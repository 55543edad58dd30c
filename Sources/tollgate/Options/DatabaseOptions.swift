import ArgumentParser
import CoreMetrics
import Foundation
import Logging
import Tollgate
import TollgatePostgres
import TollgateSQLite

/// The `--db` option every command shares.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: ArgumentHelp(
        "The database: a SQLite file, or a postgresql:// URL for a fleet's shared database. "
            + "Default: $TOLLGATE_DB, else tollgate.sqlite in the user's data directory.",
        valueName: "path"
    ))
    var path: String?

    func validate() throws {
        if let path, path.isEmpty {
            throw ValidationError("--db needs a file path or a postgresql:// URL.")
        }
    }


    /// Whether the database in force is a PostgreSQL server (`postgresql://` or `postgres://`).
    func isPostgres(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        let location = resolvedPath(environment: environment).lowercased()
        return location.hasPrefix("postgresql://") || location.hasPrefix("postgres://")
    }

    /// Refuses a URL of another scheme (a mistyped `postgressql://`, a `jdbc:postgresql://`): it
    /// would otherwise name a file, and the file's error would echo the URL and its password.
    /// - Throws: `StoreRefusal.invalidArgument` naming the scheme only.
    func requireKnownScheme() throws {
        let location = resolvedPath()
        guard let separator = location.range(of: "://"), !isPostgres() else { return }
        throw StoreRefusal.invalidArgument(
            "the database '\(location[..<separator.lowerBound])://…' is neither a file path nor a postgresql:// or postgres:// URL"
        )
    }

    /// Opens the database in force: a SQLite file or a PostgreSQL server.
    /// - Parameters:
    ///   - access: `.readWrite` creates and migrates what is missing (the file, its default
    ///     directory, the schema); `.readOnly` creates, migrates and writes nothing: a SQLite file
    ///     must exist, a PostgreSQL schema must be current.
    ///   - logger: Where the store logs.
    ///   - announcingCreation: Whether a SQLite file created here is said on standard error (an
    ///     operator's command; `get` and `proxy` create the ledger at first use, quietly).
    /// - Returns: The store, its name for messages (never a password) and how to close it.
    /// - Throws: What opening the store throws.
    func open(access: SQLiteStore.Access, logger: Logger, announcingCreation: Bool = false) async throws -> OpenedDatabase {
        try requireKnownScheme()
        if isPostgres() {
            let store = try await PostgresStore(
                url: resolvedPath(), configuration: .init(migratesOnOpen: access == .readWrite), logger: logger
            )
            return OpenedDatabase(
                name: "\(store.location)", store: store, close: { await store.shutdown() },
                watchCircuitChanges: { onChange in try await store.watchCircuitChanges { _ in onChange() } }
            )
        }
        let path = access == .readWrite ? try preparedPath() : resolvedPath()
        let existed = FileManager.default.fileExists(atPath: path)
        let store = try SQLiteStore(path: path, configuration: .init(access: access), logger: logger)
        if !existed, access == .readWrite, announcingCreation {
            // A mistyped --db would otherwise set a limit or open a circuit on an empty ledger of
            // its own, and say it succeeded.
            FileHandle.standardError.write(Data("tollgate: there was no database at \(path): a new, empty one was created there.\n".utf8))
        }
        // A snapshot read without the -shm file does not follow other processes' writes: say so.
        return OpenedDatabase(name: store.readsImmutableSnapshot ? "\(path) (snapshot)" : path, store: store, close: {})
    }

    /// The gate over the database in force — a SQLite file (created and migrated when needed) or
    /// a PostgreSQL server (migrated when needed).
    /// - Parameters:
    ///   - transport: How the gate reaches the network.
    ///   - configuration: The gate's rules.
    ///   - logger: Where the store and the gate log.
    ///   - metrics: Where the gate reports its metrics; the bootstrapped `MetricsSystem` by default.
    /// - Returns: The gate, and the database it runs over (close it once the gate is no longer used).
    /// - Throws: What opening the store throws.
    func openGate(
        transport: any HTTPTransport, configuration: GateConfiguration, logger: Logger,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) async throws -> (gate: Gate, database: OpenedDatabase) {
        let database = try await open(access: .readWrite, logger: logger)
        do {
            let gate = try Gate(storage: database.store, transport: transport, configuration: configuration,
                                clock: SystemClock(), logger: logger, metrics: metrics)
            return (gate, database)
        } catch {
            await database.close()
            throw error
        }
    }

    /// The path in force: `--db`, else `TOLLGATE_DB`, else the user's data directory.
    func resolvedPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path { return path }
        if let path = environment["TOLLGATE_DB"], !path.isEmpty { return path }
        let dataDirectory = environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.homeDirectoryForCurrentUser.appending(path: ".local/share")
        return dataDirectory.appending(path: "tollgate/tollgate.sqlite").path
    }

    /// The path in force, with its directory created when it is the default location.
    func preparedPath() throws -> String {
        let path = resolvedPath()
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        if self.path == nil, !FileManager.default.fileExists(atPath: directory.path) {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        return path
    }
}
