import Foundation
import Synchronization

/// The identical requests in flight in this process, one flight per cache key: the first request
/// leads, the others wait on its flight without polling. (Across processes, the store's
/// coalescing lease does the same; see `Gate+Coalescing.swift`.)
final class RequestCoalescer: Sendable {
    private let flights = Mutex<[String: Flight]>([:])

    /// Joins the flight for `key`, starting it when there is none.
    /// - Returns: The flight, and whether this request leads it.
    func join(_ key: String, at now: Date) -> (flight: Flight, leads: Bool) {
        flights.withLock { flights in
            if let running = flights[key] { return (running, false) }
            let flight = Flight(startedAt: now)
            flights[key] = flight
            return (flight, true)
        }
    }

    /// Ends the leader's flight for `key` and wakes every request waiting on it.
    func finish(_ key: String, _ flight: Flight) {
        flights.withLock { flights in
            if flights[key] === flight { flights[key] = nil }
        }
        flight.finish()
    }

    /// One leader's request, and the requests waiting for its answer.
    final class Flight: Sendable {
        /// When the leader started: an answer stored since then is the flight's.
        let startedAt: Date
        private let state = Mutex(State())

        private struct State {
            var finished = false
            var nextWaiter = 0
            var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        }

        init(startedAt: Date) {
            self.startedAt = startedAt
        }

        /// Waits until the flight finishes, or until `clock` reads `deadline`: a waiter never waits
        /// longer for another request's answer than it would for its own.
        ///
        /// The deadline is a ``TollgateClock/sleep(until:)``, which does not move the clock: on a
        /// simulated clock the waiter gives up when the time the leader's own waits took (its
        /// backoffs, its throttle waits) has passed, not at once; on a manual clock when the test
        /// advances it.
        /// - Returns: True when the flight finished.
        func wait(until deadline: Date, on clock: any TollgateClock) async -> Bool {
            await withTaskGroup(of: Bool.self) { group in
                group.addTask { await self.wait(); return true }
                group.addTask {
                    try? await clock.sleep(until: deadline)
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
        }

        /// Waits until the flight finishes or the task is cancelled.
        private func wait() async {
            let id = state.withLock { state -> Int? in
                guard !state.finished else { return nil }
                state.nextWaiter += 1
                return state.nextWaiter
            }
            guard let id else { return }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if state.finished || Task.isCancelled { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }

        fileprivate func finish() {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.finished = true
                defer { state.waiters.removeAll() }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }
    }
}
