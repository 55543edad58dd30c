import Foundation

/// Operations on the store as a whole, for operators: compacting the file and reading the record
/// of administrative changes (`admin_events`).
///
/// ``SQLiteStore`` implements them; a server database (PostgreSQL) implements its own equivalent.
public protocol MaintenanceStorage: Sendable {
    /// Rebuilds the file to give back the space that deleted rows left (SQLite's `VACUUM`), then
    /// checkpoints the write-ahead log into the file and truncates it, and records an `admin_events`
    /// row (subject `database`, action `vacuum`).
    ///
    /// `VACUUM` cannot run inside a transaction, so this operation is the one that is not a single
    /// transaction: the vacuum, the checkpoint and the event are three steps. Other processes may
    /// keep reading and writing; the vacuum waits for their write locks like any writer.
    /// - Parameter at: The time recorded in the event.
    /// - Returns: The sizes before and after, and the checkpoint's result.
    /// - Throws: `DatabaseError` when SQLite fails (a busy file past the busy timeout, a full disk).
    func vacuum(at: Date) async throws -> VacuumResult

    /// The latest administrative events, newest first.
    /// - Parameters:
    ///   - subject: Only events about `throttle`, `cache` or `database`; nil for every subject.
    ///   - limit: The most events to return.
    /// - Returns: The events.
    /// - Throws: `DatabaseError` when SQLite fails.
    func adminEvents(subject: String?, limit: Int) async throws -> [AdminEvent]
}
