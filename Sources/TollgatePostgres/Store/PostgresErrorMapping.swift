import PostgresNIO
import TollgateCore

/// Turns the driver's errors into ``PostgresStoreError``s that name the server and the operation.
///
/// `PSQLError`'s own description hides everything (so it cannot leak a bound value); the parts
/// kept here are the server's message and SQLSTATE, which never contain bound values, and the
/// network error's text.
enum PostgresErrorMapping {
    /// Maps the driver's and the pool's errors; any other error (the store's own, a decoding
    /// error) is the caller's to see as it is.
    static func map(_ error: any Error, server: String, operation: String) -> any Error {
        switch error {
        case let error as PSQLError:
            if error.code == .server, let state = error.serverInfo?[.sqlState],
               state.hasPrefix("08") || state.hasPrefix("57P") {
                // Connection exceptions and the server shutting down or terminating the session:
                // the connection is gone, not the statement refused.
                return PostgresStoreError.connectionLost(server: server, operation: operation, reason: reason(of: error))
            }
            if error.code == .server {
                return PostgresStoreError.server(
                    server: server, operation: operation,
                    sqlState: error.serverInfo?[.sqlState] ?? "", message: error.serverInfo?[.message] ?? "no message"
                )
            }
            return PostgresStoreError.connectionLost(server: server, operation: operation, reason: reason(of: error))
        case is PostgresConnectionClosed, is PostgresStore.ClosedBeforeBegin:
            return PostgresStoreError.connectionLost(
                server: server, operation: operation, reason: "the server had closed the connection"
            )
        default:
            // The pool's own error type lives in an underscored module; matched by name rather than
            // by importing it. It fails waiting requests once connecting has failed for a while.
            if String(reflecting: type(of: error)).hasSuffix("ConnectionPoolError") {
                return PostgresStoreError.unreachable(
                    server: server, reason: "no connection could be made for \(operation): \(error)"
                )
            }
            return error
        }
    }

    /// The server's SQLSTATE, when `error` is the server refusing a statement.
    static func sqlState(of error: any Error) -> String? {
        guard let error = error as? PSQLError, error.code == .server else { return nil }
        return error.serverInfo?[.sqlState]
    }

    /// A short, secret-free account of why a connection or statement failed.
    static func reason(of error: any Error) -> String {
        guard let error = error as? PSQLError else { return String(describing: error) }
        if error.code == .server {
            let message = error.serverInfo?[.message] ?? "the server refused"
            return error.serverInfo?[.sqlState].map { "\(message), SQLSTATE \($0)" } ?? message
        }
        if let underlying = error.underlying {
            return String(describing: underlying)
        }
        return "\(error.code)"
    }
}
