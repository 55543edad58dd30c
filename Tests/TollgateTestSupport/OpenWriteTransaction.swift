import Dispatch
import Synchronization
import TollgateCore
import TollgateSQLite

/// A write transaction held open on a dispatch thread, to show what other connections and
/// processes see meanwhile. Blocking happens on that thread, never on a cooperative one.
public final class OpenWriteTransaction: Sendable {
    private let release = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let failure = Mutex<(any Error)?>(nil)

    /// Begins a write transaction on `store`, runs `statements` in it, and returns while it is open.
    /// - Parameters:
    ///   - store: The store.
    ///   - statements: What the transaction writes before it waits.
    public init(_ store: SQLiteStore, _ statements: @escaping @Sendable (Database) throws -> Void) async {
        let inside = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { [self] in
            do {
                try store.write { db in
                    try statements(db)
                    inside.signal()
                    self.release.wait()
                }
            } catch {
                self.failure.withLock { $0 = error }
                inside.signal()
            }
            self.finished.signal()
        }
        await Self.wait(for: inside)
    }

    /// Lets the transaction commit and waits until it has.
    /// - Throws: What the transaction threw.
    public func commit() async throws {
        release.signal()
        await Self.wait(for: finished)
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private static func wait(for semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { semaphore.wait(); continuation.resume() }
        }
    }
}
