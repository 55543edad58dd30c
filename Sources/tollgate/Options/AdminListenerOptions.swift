import ArgumentParser
import Foundation
import Logging
import Tollgate
import TollgateAdmin

/// `--token` for a command that serves the operators' listener; `TOLLGATE_ADMIN_TOKEN` otherwise.
struct AdminTokenOption: ParsableArguments {
    @Option(name: .customLong("admin-token"), help: ArgumentHelp(
        "A token every request to the admin listener must carry (Authorization: Bearer TOKEN, or ?token=TOKEN). "
            + "Required to listen on a non-loopback address. Default: $TOLLGATE_ADMIN_TOKEN.",
        valueName: "token"
    ))
    var token: String?

    /// The token in force: the option, else `TOLLGATE_ADMIN_TOKEN`.
    func resolved(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        (token ?? environment["TOLLGATE_ADMIN_TOKEN"]).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Checks an address against the token rule before anything is opened.
    /// - Parameters:
    ///   - text: The address given.
    ///   - option: The option's name, for the message.
    /// - Throws: `ValidationError` for a malformed address, or a non-loopback one without a token.
    func validate(address text: String, option: String) throws {
        let address: AdminAddress
        do {
            address = try AdminAddress(parsing: text)
        } catch {
            throw ValidationError("\(option): \(error.description)")
        }
        if !address.isLoopback, resolved() == nil {
            throw ValidationError(
                "\(option) \(text) is reachable from other machines: give a token with --admin-token or TOLLGATE_ADMIN_TOKEN."
            )
        }
    }
}

/// Starts the operators' listener for a command and says where it listens.
enum AdminListener {
    /// Starts it over an opened database.
    /// - Parameters:
    ///   - address: `HOST:PORT`.
    ///   - token: The token, if any.
    ///   - database: The database it reads.
    ///   - process: This process's instruments, when it runs a gate.
    ///   - freshness: The freshness in force per endpoint: the process's gate's, or the ledger's
    ///     under `--api`; nil shows none.
    ///   - stopsOnSignals: Whether SIGINT and SIGTERM stop it.
    ///   - logger: Where it logs.
    /// - Returns: The running listener.
    /// - Throws: ``AdminServerError``.
    static func start(
        _ address: String, token: String?, database: OpenedDatabase, process: ProcessMetrics?,
        freshness: (@Sendable () async -> [FreshnessInForce])?, stopsOnSignals: Bool, logger: Logger
    ) async throws -> AdminServer {
        var reader = OperatorsSnapshotReader(storage: database.store)
        reader.freshness = freshness
        let server = try await AdminServer.start(
            listen: try AdminAddress(parsing: address),
            exposition: MetricsExposition(process: process, reader: reader, logger: logger),
            databaseName: database.name, token: token, stopsOnSignals: stopsOnSignals, logger: logger
        )
        // Written straight to the file descriptor, unbuffered: a script waits for this line.
        FileHandle.standardOutput.write(Data(
            "tollgate admin listening on \(server.baseURL.absoluteString)/ (dashboard; /metrics, /api/snapshot)\n".utf8
        ))
        return server
    }

    /// Serves the listener alone over the database in force, read-only, until Ctrl-C or SIGTERM:
    /// `tollgate serve-admin` and `tollgate dashboard --web`.
    /// - Parameters:
    ///   - address: `HOST:PORT`.
    ///   - token: The token, if any.
    ///   - database: The `--db` option.
    ///   - api: The description given with `--api`, if any: its `fresh_for` is shown as in force.
    ///   - logging: The logging options.
    /// - Throws: Why it could not run (a store that cannot be opened, an address in use): the
    ///   command's one error reporter prints it.
    static func serveAlone(
        _ address: String, token: String?, database: DatabaseOptions, api: GateConfiguration?, logging: LoggingOptions
    ) async throws {
        let logger = logging.bootstrap(label: "tollgate.admin", quietLevel: .warning)
        let opened = try await database.open(access: .readOnly, logger: logger)
        try await opened.closing {
            let freshness = try api.map { try FreshnessReading.fromLedger(opened.store, configuration: $0, logger: logger) }
            let server = try await start(address, token: token, database: opened, process: nil, freshness: freshness,
                                         stopsOnSignals: true, logger: logger)
            try await server.waitUntilStopped()
        }
    }
}
