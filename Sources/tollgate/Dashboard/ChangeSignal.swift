import Synchronization

/// A flag one task raises and the drawing loop takes down: "something changed, draw again".
final class ChangeSignal: Sendable {
    private let raised = Atomic(false)

    func raise() {
        raised.store(true, ordering: .releasing)
    }

    /// Whether it was raised since the last call.
    func take() -> Bool {
        raised.exchange(false, ordering: .acquiringAndReleasing)
    }
}
