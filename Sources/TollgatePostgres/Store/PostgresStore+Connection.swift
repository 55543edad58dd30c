import Logging
import PostgresNIO
import TollgateCore

extension PostgresStore {
    /// Runs `body` on a pooled connection, mapping driver errors to ``PostgresStoreError``.
    func withConnection<Result: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        do {
            return try await leased(operation, body)
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
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let logger = self.logger
        var attempt = 1
        while true {
            do {
                return try await leased(operation) { connection in
                    // Nothing was sent on a connection found closed here: another one may serve.
                    guard !connection.isClosed else { throw ClosedBeforeBegin() }
                    try await connection.run("BEGIN", logger: logger)
                    let result: Result
                    do {
                        result = try await body(connection)
                    } catch {
                        // A broken connection fails the ROLLBACK too; the server rolls back when it notices.
                        _ = try? await connection.run("ROLLBACK", logger: logger)
                        throw error
                    }
                    try await connection.run("COMMIT", logger: logger)
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
    /// Leases a pooled connection for `body` and returns its result, or fails the operation when
    /// the database cannot be relied on to ever answer.
    ///
    /// Two things would otherwise hang the caller (and every gate decision behind it): the pool
    /// retries a server that stopped answering quietly and fails its waiting requests only after a
    /// minute, so the lease is given at most ``Configuration/connectionWait``; and PostgresNIO 1.33
    /// can leave a statement written to a connection that just closed waiting forever, so a
    /// leased connection found closed while `body` still runs fails the operation a second later.
    /// `body` runs in a task of its own for that reason: a task stuck in the driver is left behind
    /// rather than awaited.
    private func leased<Result: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let wait = connectionWait
        let server = "\(location)"
        let client = self.client
        let race = LeaseRace<Result>()
        let work = Task {
            do {
                let result = try await client.withConnection { connection in
                    guard race.claim(connection) else { throw CancellationError() }
                    return try await body(connection)
                }
                race.finish(.success(result))
            } catch {
                race.finish(.failure(error))
            }
        }
        let watchdog = Task {
            try await Task.sleep(for: wait)
            let unreachable = PostgresStoreError.unreachable(
                server: server,
                reason: "no connection for \(operation) within \(wait): the server does not answer, or every "
                    + "pooled connection stayed busy"
            )
            if race.failUnlessLeased(unreachable) {
                work.cancel()
                return
            }
            while !race.isFinished {
                try await Task.sleep(for: .seconds(1))
                if race.connectionIsClosed {
                    // A statement failing normally on a closed connection has had a second to do so.
                    try await Task.sleep(for: .seconds(1))
                    race.finish(.failure(PostgresConnectionClosed()))
                }
            }
        }
        defer { watchdog.cancel() }
        return try await withTaskCancellationHandler {
            try await race.result()
        } onCancel: {
            work.cancel()
        }
    }

    /// The pool leased a connection that had closed: the transaction had not begun.
    struct ClosedBeforeBegin: Error {}

    static func isRetryable(_ error: any Error) -> Bool {
        error is CircuitRowCreatedConcurrently || error is ClosedBeforeBegin
            || ["40P01", "40001"].contains(PostgresErrorMapping.sqlState(of: error))
    }
}
