import Dispatch

/// A ``Database`` that only one thread at a time can use: the `Sendable` entry point over a
/// connection.
///
/// Every access runs on a private serial dispatch queue. Async callers suspend while the queue
/// works, so a statement that waits on another process's lock (up to the busy timeout) blocks a
/// dispatch thread, never one of Swift concurrency's cooperative threads.
final class SerializedDatabase: @unchecked Sendable {
    // @unchecked Sendable: `database` is not Sendable, and is only ever touched inside
    // `queue.sync`/`queue.async` blocks of this one serial queue (see `sync` and `run`), so no two
    // threads use it at once. `queue` itself is Sendable.
    private let database: Database
    private let queue: DispatchQueue

    init(database: Database, label: String) {
        self.database = database
        self.queue = DispatchQueue(label: label)
    }

    /// Runs `body` on the connection, blocking the calling thread until it is done.
    func sync<T>(_ body: (Database) throws -> T) throws -> T {
        try queue.sync { try body(database) }
    }

    /// Runs `body` on the connection's queue while the calling task is suspended.
    func run<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try body(self.database) })
            }
        }
    }
}
