import Dispatch
import Foundation

/// Turns Ctrl-C (SIGINT) and SIGTERM into a call — cancelling the work in progress — instead of
/// the default of dying on the spot, so that a command can still say what it charged. A second
/// signal of the same kind ends the process as usual.
final class Interruption {
    private let sources: [any DispatchSourceSignal]
    private let numbers: [Int32]

    /// Starts watching `numbers`; `handler` runs once, on the first of them.
    init(_ numbers: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable () -> Void) {
        self.numbers = numbers
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                // The next one is not caught: a second Ctrl-C ends a command that does not stop.
                signal(number, SIG_DFL)
                handler()
            }
            source.resume()
            return source
        }
    }

    /// Stops watching and restores the default actions.
    func stop() {
        for source in sources { source.cancel() }
        for number in numbers { signal(number, SIG_DFL) }
    }
}
