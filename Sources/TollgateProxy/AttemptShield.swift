import Foundation
import HTTPTypes
import Synchronization
import Tollgate

/// A transport for one proxied request that lets the attempt in flight finish when the request's
/// task is cancelled: a client that disconnects, or a shutdown, cancels the retries and their
/// waits, but the request already on its way upstream is answered and settled as any other (its
/// charge, its circuit outcome, its answer stored). ``abort()`` cancels that attempt too, for a
/// shutdown whose grace period is over.
final class AttemptShield: HTTPTransport {
    private struct State {
        var running: (@Sendable () -> Void)?
        var aborted = false
    }

    private let base: any HTTPTransport
    private let state = Mutex(State())

    /// Wraps `base`.
    init(_ base: any HTTPTransport) {
        self.base = base
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let base = self.base
        return try await shielded { try await base.send(request, body: body) }
    }

    func send(_ request: HTTPRequest, body: Data?, streamingPast limit: Int) async throws -> (HTTPResponse, HTTPResponseBody) {
        let base = self.base
        return try await shielded { try await base.send(request, body: body, streamingPast: limit) }
    }

    /// Cancels the attempt in flight, and any later one before it starts.
    func abort() {
        let running = state.withLock { state -> (@Sendable () -> Void)? in
            state.aborted = true
            return state.running
        }
        running?()
    }

    /// Runs `attempt` in a task of its own, which the caller's cancellation does not reach
    /// (awaiting a task's value does not pass cancellation on).
    private func shielded<T: Sendable>(_ attempt: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await attempt() }
        let aborted = state.withLock { state -> Bool in
            state.running = { task.cancel() }
            return state.aborted
        }
        if aborted { task.cancel() }
        defer { state.withLock { $0.running = nil } }
        return try await task.value
    }
}
