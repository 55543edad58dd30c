import Logging
import PostgresNIO
import TollgateStore

extension PostgresStore {
    /// Runs `body` on a pooled connection, mapping driver errors to ``PostgresStoreError``.
    func withConnection<Result: Sendable>(
        _ operation: String, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        do {
            return try await client.withConnection { connection in try await body(connection) }
        } catch {
            throw PostgresErrorMapping.map(error, server: "\(location)", operation: operation)
        }
    }

    /// Runs `body` in one transaction (READ COMMITTED) on a pooled connection: committed when it
    /// returns, rolled back when it throws, and the first error is the one thrown.
    ///
    /// A transaction PostgreSQL chose as a deadlock's victim (40P01) or failed to serialize
    /// (40001), or one that met a circuit row another machine created meanwhile, changed nothing,
    /// so it runs again, a few times at most.
    ///
    /// Not `PostgresConnection.withTransaction`: that wraps every error in its own type, and the
    /// operations here throw `StoreError`s that callers match on.
    func inTransaction<Result: Sendable>(
        _ operation: String, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let logger = self.logger
        var attempt = 1
        while true {
            do {
                return try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: logger)
                    let result: Result
                    do {
                        result = try await body(connection)
                    } catch {
                        // A broken connection fails the ROLLBACK too; the server rolls back when it notices.
                        _ = try? await connection.query("ROLLBACK", logger: logger)
                        throw error
                    }
                    try await connection.query("COMMIT", logger: logger)
                    return result
                }
            } catch where attempt < 4 && Self.isRetryable(error) {
                attempt += 1
                logger.debug("transaction retried", metadata: ["operation": "\(operation)", "attempt": "\(attempt)"])
            } catch {
                throw PostgresErrorMapping.map(error, server: "\(location)", operation: operation)
            }
        }
    }
}

extension PostgresStore {
    static func isRetryable(_ error: any Error) -> Bool {
        error is CircuitRowCreatedConcurrently
            || ["40P01", "40001"].contains(PostgresErrorMapping.sqlState(of: error))
    }
}

extension PostgresConnection {
    /// Every row of a query.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in try await self.query(query, logger: logger) {
            rows.append(row)
        }
        return rows
    }

    /// The first row of a query, or nil.
    func firstRow(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRow? {
        try await rows(query, logger: logger).first
    }
}
