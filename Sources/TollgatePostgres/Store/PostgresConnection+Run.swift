import Logging
import PostgresNIO
import TollgateCore

extension PostgresConnection {
    /// Runs a statement and returns its rows, refusing a connection that is already closed.
    ///
    /// PostgresNIO 1.33 writes a statement to a closed channel without failing it, and the
    /// statement then waits forever (the server ended the session: `pg_terminate_backend`, a
    /// restart, an idle timeout). Checking first turns that into an error at once; a connection
    /// that closes in the instant between the check and the write is not covered.
    @discardableResult
    func run(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        guard !isClosed else { throw PostgresConnectionClosed() }
        var rows: [PostgresRow] = []
        for try await row in try await self.query(query, logger: logger) {
            rows.append(row)
        }
        return rows
    }

    /// Every row of a query.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await run(query, logger: logger)
    }

    /// The first row of a query, or nil.
    func firstRow(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRow? {
        try await run(query, logger: logger).first
    }
}
