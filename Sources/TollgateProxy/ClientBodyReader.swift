import Foundation
import Synchronization
import Tollgate

/// Reads an answer's body for the client one chunk at a time, each read in a task of its own
/// that ``cancel()`` cancels: a client that goes stops the read — and with it the upstream
/// request, whose connection the transport closes — whatever the upstream is doing (a stream of
/// server-sent events may be silent for a long time between two events).
///
/// A read in progress when the client goes, or begun after, gets ``grace`` to bring the body's
/// end: a client that leaves as soon as it has the last event (the OpenAI SDK at `data: [DONE]`)
/// usually goes before the upstream's end of body has arrived, and its answer is whole all the same.
final class ClientBodyReader: Sendable {
    /// How long the read in progress may still bring the body's end once the client has gone.
    static let grace = Duration.milliseconds(100)

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
        if cancelled { Self.cancelAfterGrace(reading) }
        defer { state.withLock { $0.reading = nil } }
        return try await withTaskCancellationHandler {
            try await reading.value
        } onCancel: {
            reading.cancel()
        }
    }

    /// Cancels the read in progress, and every later one, each after ``grace``.
    func cancel() {
        let reading = state.withLock { state -> Task<Data?, any Error>? in
            state.cancelled = true
            return state.reading
        }
        if let reading { Self.cancelAfterGrace(reading) }
    }

    private static func cancelAfterGrace(_ reading: Task<Data?, any Error>) {
        Task {
            // The network's time, not the gate's (which a test may hold still).
            try? await ContinuousClock().sleep(for: grace)
            reading.cancel()
        }
    }
}
