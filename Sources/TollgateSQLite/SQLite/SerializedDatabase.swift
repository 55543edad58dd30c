import Dispatch
import Foundation
import TollgateCore

/// A ``Database`` that only one thread at a time can use: the `Sendable` entry point over a
/// connection.
///
/// An async caller whose connection is free runs its work at once, on its own thread, so the
/// common case — nobody else writing — costs no thread hop; otherwise the work waits on the
/// connection's serial dispatch queue, where a wait for another process's lock blocks a dispatch
/// thread, never one of Swift concurrency's cooperative threads.
///
/// Reads run once, always (``read(_:)``). A write transaction that met another process's lock at
/// its first, inline attempt is run again on the queue, and only through the one function that says
/// so in its name (``writeRerunningAfterBusy(_:)``).
final class SerializedDatabase: @unchecked Sendable {
    // @unchecked Sendable: `database` is not Sendable, and is only ever touched while `access` is
    // held (in `sync`, `runIfFree`, the inline attempts and the queued blocks), so no two threads
    // use it at once. `interrupt()` is the exception: it calls `sqlite3_interrupt`, which SQLite
    // documents as safe from any thread, on a handle that never changes. `access` (NSLock),
    // `queue` and `suspension` are Sendable; the other properties are immutable.
    private let database: Database
    private let access = NSLock()
    private let queue: DispatchQueue
    private let busyTimeout: Duration
    /// Whether a read may run on the caller's thread: in WAL mode (or in memory, or on an immutable
    /// file) a reader takes no lock that a writer holds, so it never waits for one.
    private let readsInline: Bool
    /// The connection's suspension, shared with its statements.
    let suspension: DatabaseSuspension

    init(database: Database, label: String) {
        self.database = database
        self.busyTimeout = database.busyTimeout
        self.queue = DispatchQueue(label: label)
        self.suspension = database.suspension
        let journalMode = (try? database.fetchValue(sql: "PRAGMA journal_mode").string?.lowercased()) ?? nil
        self.readsInline = database.mode == .immutable || journalMode == "wal" || journalMode == "memory"
    }

    /// Runs `body` on the connection, blocking the calling thread until it is done.
    func sync<T>(_ body: (Database) throws -> T) throws -> T {
        access.lock()
        defer { access.unlock() }
        return try body(database)
    }

    /// Runs `body` once: at once when the connection is free and a read cannot wait for a lock,
    /// else on the connection's queue while the calling task is suspended. Never run again.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        if readsInline, let result = try runIfFree(body) {
            return result
        }
        return try await onQueue(body)
    }

    /// Runs the write transaction `body`: at once when the connection is free and no other process
    /// holds the write lock, else on the connection's queue while the calling task is suspended.
    ///
    /// The inline attempt runs with SQLite's busy timeout at zero: if another process holds the
    /// lock, SQLite says so at once, `body`'s transaction rolls back as a whole, and **`body` runs
    /// again from the start** on the queue, where it waits up to the configured busy timeout. So
    /// `body` must be one transaction with no effect outside the database. This is the only place
    /// the library runs a closure again after `SQLITE_BUSY`; reads never are.
    func writeRerunningAfterBusy<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        if let result = try runIfFreeWithoutWaiting(body) {
            return result
        }
        return try await onQueue(body)
    }

    /// Runs `body` at once when no other work holds the connection; nil, without waiting, when
    /// some does. For quick looks (a pragma) that have a slower way round.
    func runIfFree<T>(_ body: (Database) throws -> T) rethrows -> T? {
        guard access.try() else { return nil }
        defer { access.unlock() }
        return try body(database)
    }

    /// Suspends or resumes the connection: while suspended, none of its statements that could
    /// take a lock runs, and the one running now is interrupted, so that its transaction rolls back
    /// and releases its lock.
    /// - Parameter suspended: Whether the connection is suspended from now on.
    func setSuspended(_ suspended: Bool) {
        if suspension.set(suspended), suspended {
            database.interrupt()
        }
    }

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                self.access.lock()
                defer { self.access.unlock() }
                continuation.resume(with: Result { try body(self.database) })
            }
        }
    }

    /// The inline attempt: nil when the connection is taken, or when SQLite's lock is.
    private func runIfFreeWithoutWaiting<T>(_ body: (Database) throws -> T) throws -> T? {
        guard access.try() else { return nil }
        defer { access.unlock() }
        database.busyTimeout = .zero
        defer { database.busyTimeout = busyTimeout }
        do {
            return try body(database)
        } catch let error as DatabaseError where error.isBusy {
            // Another process holds the lock: wait for it on the queue, not here.
            return nil
        }
    }
}
