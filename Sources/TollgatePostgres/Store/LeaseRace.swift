import PostgresNIO
import Synchronization
import TollgateCore

/// One operation's outcome, decided once by whichever comes first: its work, the wait for a
/// connection running out, or its connection closing under a statement that never ends.
final class LeaseRace<Value: Sendable>: Sendable {
    private struct State {
        var connection: PostgresConnection?
        var outcome: Result<Value, any Error>?
        var waiter: CheckedContinuation<Value, any Error>?
    }

    private let state = Mutex(State())

    /// Records the leased connection, unless the operation already failed for want of one.
    /// - Returns: Whether `body` may run: never after the caller was told the operation failed,
    ///   so a reservation cannot be charged behind an error.
    func claim(_ connection: PostgresConnection) -> Bool {
        state.withLock { state in
            guard state.outcome == nil else { return false }
            state.connection = connection
            return true
        }
    }

    /// Fails the operation unless a connection was leased for it first.
    /// - Returns: Whether this call failed it.
    func failUnlessLeased(_ error: any Error) -> Bool {
        let (failed, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Value, any Error>?) in
            guard state.connection == nil, state.outcome == nil else { return (false, nil) }
            state.outcome = .failure(error)
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume(throwing: error)
        return failed
    }

    var isFinished: Bool { state.withLock { $0.outcome != nil } }
    var connectionIsClosed: Bool { state.withLock { $0.connection }?.isClosed ?? false }

    /// Records the outcome unless one was recorded already, and wakes the waiting caller.
    func finish(_ outcome: Result<Value, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: outcome)
    }

    /// Waits for the outcome.
    func result() async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = state.withLock { state -> Result<Value, any Error>? in
                if state.outcome == nil { state.waiter = continuation }
                return state.outcome
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }
}
