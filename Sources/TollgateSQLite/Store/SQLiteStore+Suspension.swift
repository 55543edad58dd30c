import Foundation
import TollgateCore

/// Suspension, for apps whose file is shared with their extensions (an App Group container): iOS
/// terminates a suspended app that holds a lock on a shared file (`0xdead10cc`). GRDB suspends its
/// databases on `Database.suspendNotification`; a Tollgate store is suspended by calling
/// ``suspend()`` from the app's "did enter background" handler, and ``resume()`` on return.
extension SQLiteStore: SuspendableStorage {
    /// Suspends the store: from now on it takes no lock and holds none.
    ///
    /// A statement running now on either connection is interrupted (`sqlite3_interrupt`), so its
    /// transaction rolls back and releases its lock; a transaction between statements rolls back at
    /// its next statement (its `COMMIT` still runs, which releases the lock too). Every new read
    /// or write fails at once with ``StoreError/suspended(path:)``, a storage failure, until
    /// ``resume()``. Nothing committed is lost. Safe to call from any thread, any number of times.
    public func suspend() {
        writer.setSuspended(true)
        if reader !== writer { reader.setSuspended(true) }
    }

    /// Ends a suspension: reads and writes run again. Safe to call from any thread, and when the
    /// store is not suspended.
    public func resume() {
        writer.setSuspended(false)
        if reader !== writer { reader.setSuspended(false) }
    }

    /// Whether the store is suspended (``suspend()``).
    public var isSuspended: Bool { writer.suspension.isSuspended }

    /// ``StoreError/suspended(path:)`` while the store is suspended, else `nil`.
    public var suspensionError: (any StorageFailure)? {
        isSuspended ? StoreError.suspended(path: locationPath) : nil
    }

    /// Refuses a new transaction while the store is suspended, before any connection is touched.
    /// - Throws: ``StoreError/suspended(path:)``.
    func requireNotSuspended() throws {
        if isSuspended { throw StoreError.suspended(path: locationPath) }
    }
}
