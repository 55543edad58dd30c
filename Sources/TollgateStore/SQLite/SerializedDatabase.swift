import Dispatch
import Foundation

/// A ``Database`` that only one thread at a time can use: the `Sendable` entry point over a
/// connection.
///
/// An async caller whose connection is free runs its work at once, on its own thread, with
/// SQLite's busy timeout at zero: if another process holds the lock, SQLite says so immediately,
/// the transaction rolls back, and the work goes to the connection's serial dispatch queue, where
/// it waits up to the configured busy timeout. So a wait for another process's lock blocks a
/// dispatch thread, never one of Swift concurrency's cooperative threads, and the common case —
/// nobody else writing — costs no thread hop.
final class SerializedDatabase: @unchecked Sendable {
    // @unchecked Sendable: `database` is not Sendable, and is only ever touched while `access` is
    // held (in `sync`, in `run`'s inline attempt, and in `run`'s queued block), so no two threads
    // use it at once. `access` (NSLock) and `queue` are Sendable; `busyTimeout` is immutable.
    private let database: Database
    private let access = NSLock()
    private let queue: DispatchQueue
    private let busyTimeout: Duration

    init(database: Database, label: String) {
        self.database = database
        self.busyTimeout = database.busyTimeout
        self.queue = DispatchQueue(label: label)
    }

    /// Runs `body` on the connection, blocking the calling thread until it is done.
    func sync<T>(_ body: (Database) throws -> T) throws -> T {
        access.lock()
        defer { access.unlock() }
        return try body(database)
    }

    /// Runs `body` on the connection: at once when the connection is free and no other process
    /// holds the lock, else on the connection's queue while the calling task is suspended.
    ///
    /// `body` must be safe to run again from the start after `SQLITE_BUSY`: a transaction, which
    /// rolls back as a whole.
    func run<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        if let result = try runIfFreeWithoutWaiting(body) {
            return result
        }
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                self.access.lock()
                defer { self.access.unlock() }
                continuation.resume(with: Result { try body(self.database) })
            }
        }
    }

    /// Runs `body` at once when no other work holds the connection; nil, without waiting, when
    /// some does. For quick looks (a pragma) that have a slower way round.
    func runIfFree<T>(_ body: (Database) throws -> T) rethrows -> T? {
        guard access.try() else { return nil }
        defer { access.unlock() }
        return try body(database)
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
