import TollgateCore
import TollgateSQLite

/// What the commands need of a store: the gate's state, maintenance, the dashboard's snapshot
/// and the day's timeline (the web dashboard). `SQLiteStore` and `PostgresStore` both provide it.
typealias CommandStorage = GateStorage & MaintenanceStorage & DashboardSnapshotStorage & QuotaTimelineStorage

/// A database a command opened: a SQLite file or a PostgreSQL server.
struct OpenedDatabase: Sendable {
    /// How messages name it: the file's path, or `host:port/database` (never a password).
    let name: String
    /// The store over it.
    let store: any CommandStorage
    /// Closes it: a PostgreSQL store's connections are closed and waited for; a file needs nothing.
    let close: @Sendable () async -> Void
    /// Calls its argument whenever a circuit changes on any machine, until the task is cancelled:
    /// PostgreSQL's `NOTIFY`. Nil for a file, whose readers poll.
    var watchCircuitChanges: (@Sendable (_ onChange: @escaping @Sendable () -> Void) async throws -> Void)? = nil
}

extension OpenedDatabase {
    /// Runs `body`, then closes the database however `body` ended.
    /// - Parameter body: The work over the database.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    func closing<T>(after body: () async throws -> T) async throws -> T {
        let result: T
        do {
            result = try await body()
        } catch {
            await close()
            throw error
        }
        await close()
        return result
    }
}
