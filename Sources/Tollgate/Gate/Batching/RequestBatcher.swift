import Foundation
import HTTPTypes
import Synchronization

/// The batches of this process still collecting requests, one per batch key (endpoint, target
/// without the ID, header fields, options): requests for single IDs join the open batch of their
/// key; the batch is closed when its wait ends or it is full, and sent as one call by the gate
/// (see `Gate+Batching.swift`).
final class RequestBatcher: Sendable {
    /// What requests must share to share a batch: all but their ID.
    struct Key: Sendable, Hashable {
        /// The endpoint (free of secrets).
        let endpoint: String
        /// The request's method, scheme and authority.
        let method: String
        let scheme: String?
        let authority: String?
        /// The target without the ID parameter, other parameters sorted by name.
        let rest: String
        /// Every header field, in order: the key, the credential, the fields the answer may vary on.
        let fields: [String]
        /// The caller's options.
        let options: GateRequestOptions

        /// The key of `request`, whose share of a batch is `share`.
        init(endpoint: String, request: HTTPRequest, share: BatchSplitter.Share, options: GateRequestOptions) {
            self.endpoint = endpoint
            self.method = request.method.rawValue
            self.scheme = request.scheme
            self.authority = request.authority
            self.rest = share.rest
            self.fields = request.headerFields.map { "\($0.name.canonicalName): \($0.value)" }
            self.options = options
        }
    }

    /// One request waiting in a batch.
    struct Member: Sendable {
        /// Its ID.
        let share: BatchSplitter.Share
        /// The request as its caller gave it: its answer is stored under its key.
        let request: HTTPRequest
        /// How its request would have reached the network: the batch goes by its first member's.
        let transport: any HTTPTransport
    }

    /// What a member gets from its batch.
    enum Outcome: Sendable {
        /// The batch had no other member: the request goes on alone, as if there were no batching.
        case alone
        /// Its answer, split from the batch's.
        case answered(GateResponse)
        /// The batch's call failed or was refused: the same error for every member.
        case failed(any Error)
    }

    /// How a request joined.
    struct Joined: Sendable {
        /// The batch.
        let batch: Batch
        /// The member's ticket in it.
        let ticket: Int
        /// Whether it opened the batch (and starts its wait).
        let opened: Bool
        /// Whether it filled the batch, which is closed: it is sent at once.
        let closed: [Batch.Entry]?
    }

    private let open = Mutex<[Key: Batch]>([:])

    /// Adds `member` to the open batch of `key`, opening one when there is none.
    /// - Parameter maximum: The most IDs a batch carries.
    func join(_ key: Key, _ member: Member, maximum: Int) -> Joined {
        open.withLock { open in
            let batch: Batch
            let opened: Bool
            if let running = open[key] {
                (batch, opened) = (running, false)
            } else {
                (batch, opened) = (Batch(), true)
                open[key] = batch
            }
            let (ticket, distinct) = batch.add(member)
            guard distinct >= maximum, let entries = batch.close() else {
                return Joined(batch: batch, ticket: ticket, opened: opened, closed: nil)
            }
            open[key] = nil
            return Joined(batch: batch, ticket: ticket, opened: opened, closed: entries)
        }
    }

    /// Closes the batch of `key` when it is still open: its wait ended.
    /// - Returns: Its members, or nil when it was closed already (full, or left by all).
    func close(_ key: Key, _ batch: Batch) -> [Batch.Entry]? {
        open.withLock { open in
            if open[key] === batch { open[key] = nil }
            return batch.close()
        }
    }

    /// A member that has gone (its task was cancelled) leaves its batch: before the batch is sent
    /// its ID is not sent unless another member asks for it; after, the batch's answer is not its.
    func leave(_ key: Key, _ batch: Batch, ticket: Int) {
        open.withLock { open in
            if batch.leave(ticket), open[key] === batch {
                // No one is left: the batch is never sent.
                open[key] = nil
                _ = batch.close()
            }
        }
    }

    /// The batches open now: for tests that step a clock once every request has joined.
    var openMembers: Int {
        open.withLock { $0.values.reduce(0) { $0 + $1.memberCount } }
    }

    /// Requests for single IDs, collected to go as one call.
    final class Batch: Sendable {
        /// A member and its ticket.
        struct Entry: Sendable {
            let ticket: Int
            let member: Member
        }

        private struct State {
            var entries: [Entry] = []
            var nextTicket = 0
            var closed = false
            var timer: Task<Void, Never>?
            var outcomes: [Int: Outcome] = [:]
            var waiters: [Int: CheckedContinuation<Outcome?, Never>] = [:]
            var gone: Set<Int> = []
        }

        private let state = Mutex(State())

        /// Members collected and not gone.
        var memberCount: Int { state.withLock { $0.entries.count } }

        /// Adds a member. - Returns: Its ticket, and how many distinct IDs the batch now holds.
        fileprivate func add(_ member: Member) -> (ticket: Int, distinct: Int) {
            state.withLock { state in
                state.nextTicket += 1
                state.entries.append(Entry(ticket: state.nextTicket, member: member))
                return (state.nextTicket, Set(state.entries.map(\.member.share.id)).count)
            }
        }

        /// Closes the batch, stopping its wait. - Returns: Its members, or nil when closed already.
        fileprivate func close() -> [Entry]? {
            let (entries, timer) = state.withLock { state -> ([Entry]?, Task<Void, Never>?) in
                guard !state.closed else { return (nil, nil) }
                state.closed = true
                defer { state.timer = nil }
                return (state.entries, state.timer)
            }
            timer?.cancel()
            return entries
        }

        /// Sets the task that closes the batch when its wait ends; cancelled at once when the
        /// batch was closed meanwhile.
        func setTimer(_ timer: Task<Void, Never>) {
            let closed = state.withLock { state -> Bool in
                if !state.closed { state.timer = timer }
                return state.closed
            }
            if closed { timer.cancel() }
        }

        /// Removes a member that has gone. - Returns: Whether the batch, still open, is now empty.
        fileprivate func leave(_ ticket: Int) -> Bool {
            let (waiter, empty) = state.withLock { state -> (CheckedContinuation<Outcome?, Never>?, Bool) in
                state.gone.insert(ticket)
                if !state.closed { state.entries.removeAll { $0.ticket == ticket } }
                return (state.waiters.removeValue(forKey: ticket), !state.closed && state.entries.isEmpty)
            }
            waiter?.resume(returning: nil)
            return empty
        }

        /// Hands a member its outcome.
        func deliver(_ outcome: Outcome, to ticket: Int) {
            let waiter = state.withLock { state -> CheckedContinuation<Outcome?, Never>? in
                guard !state.gone.contains(ticket) else { return nil }
                if let waiter = state.waiters.removeValue(forKey: ticket) { return waiter }
                state.outcomes[ticket] = outcome
                return nil
            }
            waiter?.resume(returning: outcome)
        }

        /// Waits for a member's outcome. - Returns: nil when the member's task was cancelled.
        /// - Parameter onCancel: Runs when the member's task is cancelled: it leaves the batch.
        func outcome(for ticket: Int, onCancel: @escaping @Sendable () -> Void) async -> Outcome? {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Outcome?, Never>) in
                    let ready = state.withLock { state -> Outcome?? in
                        if state.gone.contains(ticket) { return .some(nil) }
                        if let outcome = state.outcomes.removeValue(forKey: ticket) { return .some(outcome) }
                        state.waiters[ticket] = continuation
                        return .none
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                onCancel()
            }
        }
    }
}
