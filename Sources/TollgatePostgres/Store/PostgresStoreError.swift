import TollgateCore

/// Why a ``PostgresStore`` could not do what it was asked.
///
/// Descriptions name the server (`host:port/database`) and say what to check, and never carry a
/// password or a bound value. Refusals by the domain's rules (an invalid argument, a database newer
/// than the library or migrated from different scripts) are `StoreRefusal`s, as for SQLite, so
/// callers handle both stores alike.
public enum PostgresStoreError: StorageFailure, Sendable, Hashable, CustomStringConvertible {
    /// The URL is not a `postgresql://` or `postgres://` URL the store understands.
    case invalidURL(String, reason: String)
    /// No connection could be made to the server, or it refused this user or database.
    /// - `server`: `host:port/database`.
    /// - `reason`: What failed, as the driver or the server said it.
    case unreachable(server: String, reason: String)
    /// A connection broke while an operation ran: the operation's outcome is unknown to the client,
    /// but it was one transaction, so it either happened entirely or not at all.
    case connectionLost(server: String, operation: String, reason: String)
    /// The server refused a statement.
    /// - `sqlState`: The SQLSTATE code, such as `23514` for a failed CHECK.
    /// - `message`: The server's message (which never includes bound values).
    case server(server: String, operation: String, sqlState: String, message: String)

    /// Whether the failure is the server's or the network's rather than the caller's: the gate
    /// treats these as ledger failures (its `ledgerFailurePolicy` decides, failing closed by default).
    public var isStorageFailure: Bool {
        switch self {
        case .invalidURL: false
        case .unreachable, .connectionLost, .server: true
        }
    }

    /// What went wrong and what to check, naming the server.
    public var description: String {
        switch self {
        case .invalidURL(let url, let reason):
            "\(url) is not a PostgreSQL URL Tollgate can use: \(reason). "
                + "Write it as postgresql://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]."
        case .unreachable(let server, let reason):
            "The PostgreSQL server at \(server) cannot be reached (\(reason)). Check that the server is running "
                + "and listens on that host and port (listen_addresses, port, a firewall between), that the "
                + "database exists, and that pg_hba.conf lets this user connect from this machine."
        case .connectionLost(let server, let operation, let reason):
            "The connection to the PostgreSQL server at \(server) broke during \(operation) (\(reason)). "
                + "The operation was one transaction: it was applied entirely or not at all. Check the server's "
                + "log and the network, and try again."
        case .server(let server, let operation, let sqlState, let message):
            "The PostgreSQL server at \(server) refused \(operation): \(message) (SQLSTATE \(sqlState)). "
                + "Nothing of the operation was applied."
        }
    }
}
