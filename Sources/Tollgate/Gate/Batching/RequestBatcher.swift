import Foundation
import HTTPTypes
import Synchronization

/// The lanes of this process's batchable requests, one per batch key (endpoint, target without
/// the ID, header fields, options), and what each lane has on the wire and collecting.
///
/// Batching waits only where there is concurrency, as a DataLoader collects only what arrives in
/// one tick: a request that finds nothing of its key on the wire or collecting goes at once,
/// alone, and waits for nothing. A request that arrives while a call of its key is on the wire
/// joins the batch collecting behind it, opening one when there is none. A collecting batch is
/// closed when it is full, at once; else once its wait has passed since its first member joined
/// and the calls of its key ahead of it have landed, whichever is later (what arrives together,
/// and while the calls ahead are on the wire, goes together, up to the batch's maximum: a group
/// commit, as in `CallBatcher`). Later joiners never extend the wait: a stream of requests cannot
/// hold a batch open until it is full. Then it is on the wire, and requests arriving meanwhile
/// open the next batch. The gate sends what is closed (see `Gate+Batching.swift`).
final class RequestBatcher: Sendable {
    /// What requests must share to share a batch: all but their ID.
    struct Key: Sendable, Hashable {
        /// The endpoint (free of secrets).
        let endpoint: String
        /// The request's method, scheme and authority.
        let method: HTTPRequest.Method
        let scheme: String?
        let authority: String?
        /// The target without the ID parameter, other parameters sorted by name.
        let rest: String
        /// Every header field, in order: the key, the credential, the fields the answer may vary on.
        let fields: HTTPFields
        /// The caller's options.
        let options: GateRequestOptions
        /// The hash of all of the above, worked out once: every request of a batchable endpoint
        /// makes a key, and a request that goes alone looks its lane up when it joins and again
        /// when it lands.
        private let keyHash: Int

        /// The key of `request`, whose share of a batch is `share`.
        init(endpoint: String, request: HTTPRequest, share: BatchSplitter.Share, options: GateRequestOptions) {
            self.endpoint = endpoint
            self.method = request.method
            self.scheme = request.scheme
            self.authority = request.authority
            self.rest = share.rest
            self.fields = request.headerFields
            self.options = options
            var hasher = Hasher()
            hasher.combine(endpoint)
            hasher.combine(method)
            hasher.combine(scheme)
            hasher.combine(authority)
            hasher.combine(rest)
            hasher.combine(fields.count)
            for field in fields {
                hasher.combine(field.name.canonicalName)
                hasher.combine(field.value)
            }
            hasher.combine(options)
            keyHash = hasher.finalize()
        }

        func hash(into hasher: inout Hasher) { hasher.combine(keyHash) }

        static func == (lhs: Key, rhs: Key) -> Bool {
            // Every field in order, by name and value (`HTTPFields`' own equality lets differently
            // named fields come in another order).
            lhs.keyHash == rhs.keyHash && lhs.endpoint == rhs.endpoint && lhs.method == rhs.method
                && lhs.scheme == rhs.scheme && lhs.authority == rhs.authority && lhs.rest == rhs.rest
                && lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
                && lhs.options == rhs.options
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
        /// The request goes on alone, as if there were no batching: its batch had no other member
        /// (the request is then its key's call on the wire, and lands it when it ends), or its
        /// answer could not be split (the batch's call has landed).
        case alone(landsCall: Bool)
        /// Its answer, split from the batch's.
        case answered(GateResponse)
        /// The batch's call failed or was refused: the same error for every member.
        case failed(any Error)
    }

    /// Where a request stands once it has asked to join.
    enum Joined: Sendable {
        /// Nothing of its key is on the wire or collecting: it goes at once, alone, as its key's
        /// call on the wire, and calls ``landed(_:)`` when it ends.
        case goesAlone
        /// It waits in `batch` with `ticket`; `opensBatch` when it opened the batch, which then
        /// needs its timer (``timerFired(_:_:wait:now:)``).
        case waits(batch: Batch, ticket: Int, opensBatch: Bool)
        /// It filled `batch`, which is closed and on the wire: the caller sends `entries` at once
        /// and waits for its own outcome with `ticket`.
        case fills(batch: Batch, ticket: Int, entries: [Batch.Entry])
    }

    /// One key's calls on the wire (a request gone alone, or a batch) and the batch collecting behind them.
    private struct Lane {
        var onTheWire = 0
        var collecting: Batch?
        /// Whether the collecting batch's timer found it due while calls were on the wire, and
        /// stopped: the last of them to land sends it, or starts its timer again.
        var parked = false

        var isIdle: Bool { onTheWire == 0 && collecting == nil }
    }

    private let lanes = Mutex<[Key: Lane]>([:])

    /// Goes alone when nothing of `key` is on the wire or collecting; else adds `member` to the
    /// collecting batch of `key`, opening one when there is none, and closes it when it holds
    /// `maximum` distinct IDs.
    /// - Parameter now: The time it joins, on the gate's clock: the wait of a batch it opens counts from then.
    func join(_ key: Key, _ member: Member, maximum: Int, now: Date) -> Joined {
        lanes.withLock { lanes in
            var lane = lanes[key] ?? Lane()
            defer { lanes[key] = lane }
            guard !lane.isIdle else {
                lane.onTheWire += 1
                return .goesAlone
            }
            let batch = lane.collecting ?? Batch()
            let opens = lane.collecting == nil
            lane.collecting = batch
            let (ticket, distinct) = batch.add(member, at: now)
            guard distinct >= maximum, let entries = batch.close() else {
                return .waits(batch: batch, ticket: ticket, opensBatch: opens)
            }
            lane.collecting = nil
            lane.parked = false
            lane.onTheWire += 1
            return .fills(batch: batch, ticket: ticket, entries: entries)
        }
    }

    /// What a batch's timer finds when it fires.
    enum WaitsEnd: Sendable {
        /// The batch is closed now, with these members, and on the wire: send them.
        case closes([Batch.Entry])
        /// It was closed already (full, or left by all).
        case closedAlready
        /// Its first member joined less than its wait ago: it waits this much longer.
        case waitsLonger(Duration)
        /// Calls of its key are still on the wire: the timer stops, and the last of them to land
        /// sends the batch (``Landing``).
        case waitsForCallsAhead
    }

    /// What a batch's timer does when it fires: closes the batch once `wait` has passed since its
    /// first member joined and no call of its key is on the wire.
    func timerFired(_ key: Key, _ batch: Batch, wait: Duration, now: Date) -> WaitsEnd {
        lanes.withLock { lanes in
            guard var lane = lanes[key], lane.collecting === batch else { return .closedAlready }
            defer { lanes[key] = lane }
            if let remaining = Self.remainingWait(of: batch, wait: wait, now: now) { return .waitsLonger(remaining) }
            guard lane.onTheWire == 0 else {
                lane.parked = true
                return .waitsForCallsAhead
            }
            return Self.close(&lane).map(WaitsEnd.closes) ?? .closedAlready
        }
    }

    /// What the end of a call on the wire leaves to do.
    enum Landing: Sendable {
        /// Nothing: other calls of its key are on the wire, or no batch waits for it.
        case nothing
        /// The batch that waited for it (its wait had passed) is closed and on the wire: send these members.
        case sends(Batch, [Batch.Entry])
    }

    /// A call of `key` on the wire has ended (a request gone alone, or a batch). When it was the
    /// last, the batch whose wait had passed behind it goes now; when nothing of the key is left,
    /// the next request goes at once.
    func landed(_ key: Key) -> Landing {
        lanes.withLock { lanes in
            guard var lane = lanes[key] else { return .nothing }
            lane.onTheWire = max(0, lane.onTheWire - 1)
            let landing = Self.afterLanding(&lane)
            lanes[key] = lane.isIdle ? nil : lane
            return landing
        }
    }

    /// A member that has gone (its task was cancelled) leaves its batch: before the batch is sent
    /// its ID is not sent unless another member asks for it; after, the batch's answer is not its.
    /// - Returns: What is left to do when the member had been told to go alone as its key's call
    ///   on the wire, and never will: that call has landed.
    func leave(_ key: Key, _ batch: Batch, ticket: Int) -> Landing {
        let (emptied, dropsCall) = batch.leave(ticket)
        return lanes.withLock { lanes in
            guard var lane = lanes[key] else { return .nothing }
            if emptied, lane.collecting === batch {
                // No one is left: the batch is never sent.
                _ = batch.close()
                lane.collecting = nil
                lane.parked = false
            }
            var landing = Landing.nothing
            if dropsCall {
                lane.onTheWire = max(0, lane.onTheWire - 1)
                landing = Self.afterLanding(&lane)
            }
            lanes[key] = lane.isIdle ? nil : lane
            return landing
        }
    }

    /// What a lane does once a call of it has landed: the parked batch goes (it parked only once
    /// its wait had passed, and a wait counted from the first join never grows back).
    private static func afterLanding(_ lane: inout Lane) -> Landing {
        guard lane.onTheWire == 0, lane.parked, let batch = lane.collecting else { return .nothing }
        return close(&lane).map { .sends(batch, $0) } ?? .nothing
    }

    /// How much longer `batch` waits for more requests; nil when `wait` has passed since its first
    /// member joined.
    private static func remainingWait(of batch: Batch, wait: Duration, now: Date) -> Duration? {
        guard let opened = batch.firstJoined else { return nil }
        let open = Duration.seconds(now.timeIntervalSince(opened))
        // Within a few microseconds counts as passed: times are Dates, whose differences round.
        return open + .microseconds(10) < wait ? wait - open : nil
    }

    /// Closes the lane's collecting batch, from its timer or a landing: it is then on the wire.
    private static func close(_ lane: inout Lane) -> [Batch.Entry]? {
        guard let batch = lane.collecting else { return nil }
        lane.collecting = nil
        lane.parked = false
        guard let entries = batch.close(stoppingTimer: false) else { return nil }
        lane.onTheWire += 1
        return entries
    }

    /// Requests waiting in collecting batches: for tests that step a clock once every request has joined.
    var collectingMembers: Int {
        lanes.withLock { $0.values.reduce(0) { $0 + ($1.collecting?.memberCount ?? 0) } }
    }

    /// Calls on the wire, alone or batched, over every key.
    var callsOnTheWire: Int {
        lanes.withLock { $0.values.reduce(0) { $0 + $1.onTheWire } }
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
            var firstJoined: Date?
            var outcomes: [Int: Outcome] = [:]
            var waiters: [Int: CheckedContinuation<Outcome?, Never>] = [:]
            var gone: Set<Int> = []
        }

        private let state = Mutex(State())

        /// Members collected and not gone.
        var memberCount: Int { state.withLock { $0.entries.count } }

        /// When its first member joined (the one that opened it), while it collects.
        var firstJoined: Date? { state.withLock { $0.closed ? nil : $0.firstJoined } }

        /// Adds a member joining at `now`. - Returns: Its ticket, and how many distinct IDs the batch now holds.
        fileprivate func add(_ member: Member, at now: Date) -> (ticket: Int, distinct: Int) {
            state.withLock { state in
                state.nextTicket += 1
                if state.firstJoined == nil { state.firstJoined = now }
                state.entries.append(Entry(ticket: state.nextTicket, member: member))
                return (state.nextTicket, Set(state.entries.map(\.member.share.id)).count)
            }
        }

        /// Closes the batch. - Returns: Its members, or nil when closed already.
        /// - Parameter stoppingTimer: Whether to cancel its timer: not from the timer's own task.
        fileprivate func close(stoppingTimer: Bool = true) -> [Entry]? {
            let (entries, timer) = state.withLock { state -> ([Entry]?, Task<Void, Never>?) in
                guard !state.closed else { return (nil, nil) }
                state.closed = true
                defer { state.timer = nil }
                return (state.entries, state.timer)
            }
            if stoppingTimer { timer?.cancel() }
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

        /// Removes a member that has gone.
        /// - Returns: Whether the batch, still collecting, is now empty; whether the member had
        ///   been told to go alone as its key's call and had not yet heard it.
        fileprivate func leave(_ ticket: Int) -> (emptied: Bool, dropsCall: Bool) {
            let (waiter, emptied, unheard) = state.withLock { state in
                state.gone.insert(ticket)
                if !state.closed { state.entries.removeAll { $0.ticket == ticket } }
                return (state.waiters.removeValue(forKey: ticket), !state.closed && state.entries.isEmpty,
                        state.outcomes.removeValue(forKey: ticket))
            }
            waiter?.resume(returning: nil)
            if case .alone(landsCall: true) = unheard { return (emptied, true) }
            return (emptied, false)
        }

        /// Hands a member its outcome.
        /// - Returns: Whether the member is there to take it (it has not gone).
        @discardableResult
        func deliver(_ outcome: Outcome, to ticket: Int) -> Bool {
            let (waiter, taken) = state.withLock { state -> (CheckedContinuation<Outcome?, Never>?, Bool) in
                guard !state.gone.contains(ticket) else { return (nil, false) }
                if let waiter = state.waiters.removeValue(forKey: ticket) { return (waiter, true) }
                state.outcomes[ticket] = outcome
                return (nil, true)
            }
            waiter?.resume(returning: outcome)
            return taken
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
