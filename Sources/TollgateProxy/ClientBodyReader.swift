import Foundation
import Synchronization
import Tollgate

/// Reads an answer's body for the client one chunk at a time, each read in a task of its own
/// that ``cancel()`` cancels: a client that goes stops the read at once — and with it the upstream
/// request, whose connection the transport closes — whatever the upstream is doing (a stream of
/// server-sent events may be silent for a long time between two events).
final class ClientBodyReader: Sendable {
    private struct State {
        var reading: Task<Data?, any Error>?
        var cancelled = false
    }

    private let body: HTTPBodyStream
    private let state = Mutex(State())

    /// Reads `body`.
    init(_ body: HTTPBodyStream) {
        self.body = body
    }

    /// The next chunk, or nil at the end.
    /// - Throws: The body's error; `CancellationError` once cancelled.
    func next() async throws -> Data? {
        let body = self.body
        // Every iterator of an HTTPBodyStream reads on from where the last one stopped.
        let reading = Task { () async throws -> Data? in
            var iterator = body.makeAsyncIterator()
            return try await iterator.next()
        }
        let cancelled = state.withLock { state -> Bool in
            state.reading = reading
            return state.cancelled
        }
        if cancelled { reading.cancel() }
        defer { state.withLock { $0.reading = nil } }
        return try await withTaskCancellationHandler {
            try await reading.value
        } onCancel: {
            reading.cancel()
        }
    }

    /// Cancels the read in progress, and every later one.
    func cancel() {
        let reading = state.withLock { state -> Task<Data?, any Error>? in
            state.cancelled = true
            return state.reading
        }
        reading?.cancel()
    }
}
