import ArgumentParser
import Foundation
import Logging
import Tollgate
import TollgatePostgres
import TollgateStore

/// The `--db` option every command shares.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: ArgumentHelp(
        "The database: a SQLite file, or a postgresql:// URL (get and proxy). "
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

    /// Refuses a PostgreSQL URL for a command that reads or operates a SQLite file only.
    /// - Throws: `ValidationError` naming what works over PostgreSQL today.
    func requireSQLite() throws {
        guard isPostgres() else { return }
        throw ValidationError(
            "--db: a postgresql:// URL works with `tollgate get` and `tollgate proxy` only, for now; inspect it "
                + "with psql on the views quota_today, quota_daily, cache_stats, circuit_status and throttle_status."
        )
    }

    /// The gate over the database in force — a SQLite file (created and migrated when needed) or
    /// a PostgreSQL server (migrated when needed) — and what to call once it is no longer used.
    /// - Parameters:
    ///   - transport: How the gate reaches the network.
    ///   - configuration: The gate's rules.
    ///   - logger: Where the store and the gate log.
    /// - Returns: The gate, a name for the database that never shows a password, and the closing call.
    /// - Throws: What opening the store throws.
    func openGate(
        transport: any HTTPTransport, configuration: GateConfiguration, logger: Logger
    ) async throws -> (gate: Gate, database: String, close: @Sendable () async -> Void) {
        if isPostgres() {
            let store = try await PostgresStore(url: resolvedPath(), logger: logger)
            let gate = try Gate(storage: store, transport: transport, configuration: configuration,
                                clock: SystemClock(), logger: logger)
            return (gate, "\(store.location)", { await store.shutdown() })
        }
        let path = try preparedPath()
        let gate = try Gate(store: try SQLiteStore(path: path, logger: logger), transport: transport,
                            configuration: configuration, logger: logger)
        return (gate, path, {})
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

    /// Opens the store for a command that writes: the file (and its default directory) is created
    /// and migrated when needed.
    func openForWriting(logger: Logger = Logger(label: "tollgate")) throws -> (path: String, store: SQLiteStore) {
        try requireSQLite()
        let path = try preparedPath()
        return (path, try SQLiteStore(path: path, logger: logger))
    }

    /// Opens the store for a command that only reads: nothing is created, migrated or written,
    /// so it works on a read-only file or file system and does not wait for another process's
    /// write lock. A missing file is ``StoreError/notFound(path:)``.
    func openForReading(logger: Logger = Logger(label: "tollgate")) throws -> (path: String, store: SQLiteStore) {
        try requireSQLite()
        let path = resolvedPath()
        return (path, try SQLiteStore(path: path, configuration: .init(access: .readOnly), logger: logger))
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
