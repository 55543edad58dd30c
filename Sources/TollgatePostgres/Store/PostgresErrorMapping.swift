import PostgresNIO
import TollgateStore

/// Turns the driver's errors into ``PostgresStoreError``s that name the server and the operation.
///
/// `PSQLError`'s own description hides everything (so it cannot leak a bound value); the parts
/// kept here are the server's message and SQLSTATE, which never contain bound values, and the
/// network error's text.
enum PostgresErrorMapping {
    static func map(_ error: any Error, server: String, operation: String) -> any Error {
        switch error {
        case is StoreError, is PostgresStoreError, is CancellationError:
            return error
        case let error as PSQLError:
            if error.code == .server {
                return PostgresStoreError.server(
                    server: server, operation: operation,
                    sqlState: error.serverInfo?[.sqlState] ?? "", message: error.serverInfo?[.message] ?? "no message"
                )
            }
            return PostgresStoreError.connectionLost(server: server, operation: operation, reason: reason(of: error))
        default:
            return PostgresStoreError.connectionLost(server: server, operation: operation, reason: reason(of: error))
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
