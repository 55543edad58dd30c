import Synchronization

/// Answers held back on their way out, for tests that need a call to stay on the wire until they
/// say so (``FakeYouTubeAPI/holdAnswers()``): the request is received and answered as usual, and
/// the answer waits here before it is sent.
final class AnswerHold: Sendable {
    private struct State {
        var holding = false
        var held: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Answers held now.
    var count: Int { state.withLock { $0.held.count } }

    /// Holds every answer from now on.
    func start() { state.withLock { $0.holding = true } }

    /// Sends the answers held now; later ones are held when `holding` stays on.
    func release(holding: Bool) {
        let released = state.withLock { state in
            state.holding = holding
            defer { state.held = [] }
            return state.held
        }
        for answer in released { answer.resume() }
    }

    /// Waits until the answer may be sent.
    func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let holds = state.withLock { state in
                if state.holding { state.held.append(continuation) }
                return state.holding
            }
            if !holds { continuation.resume() }
        }
    }
}
