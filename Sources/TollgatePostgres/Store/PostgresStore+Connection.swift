import Logging
import PostgresNIO
import Synchronization
import TollgateStore

extension PostgresStore {
    /// Runs `body` on a pooled connection, mapping driver errors to ``PostgresStoreError``.
    func withConnection<Result: Sendable>(
        _ operation: String, _ body: (PostgresConnection) async throws -> Result
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
        _ operation: String, _ body: (PostgresConnection) async throws -> Result
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
    /// Leases a pooled connection for `body`, waiting at most ``Configuration/connectionWait`` for
    /// one.
    ///
    /// The pool retries a server that stopped answering quietly, and fails its waiting requests
    /// only after a minute: without this bound, every gate decision would hang that long before
    /// the ledger's failure policy could answer. Once a connection is leased, `body` runs to its
    /// end whatever its duration.
    private func leased<Result: Sendable>(
        _ operation: String, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let wait = connectionWait
        let server = "\(location)"
        let client = self.client
        return try await withoutActuallyEscaping(body) { body in
            let work = OnceCalledBody(body)
            let leased = LeaseFlag()
            return try await withThrowingTaskGroup(of: Result?.self) { group in
                group.addTask {
                    try await client.withConnection { connection in
                        leased.set()
                        return try await work.body(connection)
                    }
                }
                group.addTask {
                    try await Task.sleep(for: wait)
                    guard leased.isSet else {
                        throw PostgresStoreError.unreachable(
                            server: server,
                            reason: "no connection for \(operation) within \(wait): the server does not answer, or "
                                + "every pooled connection stayed busy"
                        )
                    }
                    return nil
                }
                while let next = try await group.next() {
                    if let result = next {
                        group.cancelAll()
                        return result
                    }
                }
                preconditionFailure("the leased operation's task ended without a result")
            }
        }
    }

    /// The pool leased a connection that had closed: the transaction had not begun.
    struct ClosedBeforeBegin: Error {}

    static func isRetryable(_ error: any Error) -> Bool {
        error is CircuitRowCreatedConcurrently || error is ClosedBeforeBegin
            || ["40P01", "40001"].contains(PostgresErrorMapping.sqlState(of: error))
    }
}

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

/// A pooled connection was found closed before a statement was sent on it.
struct PostgresConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection was already closed" }
}

/// The operation's body, handed to the child task that runs it.
///
/// `@unchecked Sendable`, because: the closure is called once, by that one task, while the
/// calling task waits for the task group to end; `withoutActuallyEscaping` checks that it does
/// not outlive the call.
private struct OnceCalledBody<Result>: @unchecked Sendable {
    let body: (PostgresConnection) async throws -> Result
    init(_ body: @escaping (PostgresConnection) async throws -> Result) { self.body = body }
}

/// Whether the pool has handed the operation its connection yet.
private final class LeaseFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
