import Synchronization
import TollgateCore

/// Whether a connection is suspended: shared by the connection and its statements, set from any
/// thread by ``SQLiteStore/suspend()`` and ``SQLiteStore/resume()``.
///
/// While it is set, every statement that could take a lock refuses to step (a `COMMIT` or
/// `ROLLBACK`, which releases one, still runs), as GRDB's suspended databases do.
final class DatabaseSuspension: Sendable {
    private let suspended = Atomic<Bool>(false)

    /// Whether the connection is suspended.
    var isSuspended: Bool { suspended.load(ordering: .acquiring) }

    /// Sets or clears the suspension.
    /// - Parameter value: Whether the connection is suspended from now on.
    /// - Returns: Whether the value changed.
    @discardableResult
    func set(_ value: Bool) -> Bool {
        suspended.exchange(value, ordering: .acquiringAndReleasing) != value
    }
}
