import TollgateCore

/// A pooled connection was found closed before a statement was sent on it.
struct PostgresConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection was already closed" }
}
