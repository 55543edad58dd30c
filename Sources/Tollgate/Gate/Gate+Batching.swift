import Foundation
import HTTPTypes
import Logging

extension Gate {
    /// Where a request stands with batching.
    enum BatchPassage {
        /// It is not batched (its endpoint is not batchable, or it is not a request for one ID).
        case notBatched
        /// Its answer, from a batch.
        case answered(GateResponse)
        /// It goes on alone as its key's call on the wire, which it lands when it ends
        /// (``batchCallLanded(_:)``), or as one of a batch whose answer could not be split.
        case alone(landing: RequestBatcher.Key?)
    }

    /// Batching (DESIGN.md, "Batching"): a request the cache could not answer, for one ID of an
    /// endpoint that takes several (``GateConfiguration/batching``). It waits only when there is
    /// concurrency: with nothing of its batch key on the wire or collecting it goes at once, alone.
    /// Else it joins the batch collecting behind the call on the wire, which is sent when full
    /// (``BatchPolicy/maximum``), or once ``BatchPolicy/wait`` has passed on the gate's clock
    /// since its first member joined and the calls ahead of it have landed, as one
    /// call through the ordinary path: one admission, one throttle slot, one charge (its event's
    /// detail says how many IDs it carried), retries by the endpoint's policy. Each member gets the
    /// answer a call for its ID alone would have given, stored under its own key; a refusal or
    /// failure is every member's, each serving its stored response where it may. A member whose
    /// task is cancelled leaves the batch to the others.
    ///
    /// Only a GET without a body or conditions of the caller's own is batched, not the gate's
    /// resend of one, nor a request whose options say it does not join batches. The batch goes
    /// by its first member's transport, and its answer is read whole, streamed to no one.
    /// - Returns: The answer from the batch, or how the request goes on without one.
    /// - Throws: The batch's refusal or failure when nothing stored can stand in; `CancellationError`
    ///   when the caller's task was cancelled while it waited.
    func batchPassage(_ request: GateRequest, lookup: CacheLookup) async throws -> BatchPassage {
        guard !configuration.batching.isEmpty, let policy = configuration.batching[request.endpoint],
              request.batchedIDs == nil, request.revalidation != .bypassingCache, request.options.joinsBatches
        else { return .notBatched }
        let http = request.request
        guard http.method == .get, request.body?.isEmpty ?? true,
              !ConditionalRequest.isConditional(http.headerFields),
              let target = http.path, let share = BatchSplitter(policy: policy).share(of: target)
        else { return .notBatched }
        let key = RequestBatcher.Key(endpoint: request.endpoint, request: http, share: share, options: request.options)
        let member = RequestBatcher.Member(share: share, request: http, transport: request.transport)
        let batch: RequestBatcher.Batch
        let ticket: Int
        switch batcher.join(key, member, maximum: policy.maximum, now: clock.now()) {
        case .goesAlone:
            return .alone(landing: key)
        case .fills(let full, let own, let entries):
            (batch, ticket) = (full, own)
            // In a task of its own, which no member's cancellation reaches.
            Task { await self.sendBatch(entries, of: full, key: key, policy: policy) }
        case .waits(let collecting, let own, let opensBatch):
            (batch, ticket) = (collecting, own)
            if opensBatch { startTimer(collecting, key: key, policy: policy) }
        }
        guard let outcome = await batch.outcome(for: ticket, onCancel: { [self] in
            follow(batcher.leave(key, batch, ticket: ticket), key: key, policy: policy)
        }) else { throw CancellationError() }
        let stored = request.options.allowsStale ? lookup.cachedResponse.flatMap { servableOnError($0, for: http) } : nil
        switch outcome {
        case .alone(let landsCall):
            return .alone(landing: landsCall ? key : nil)
        case .answered(let answer):
            if let stored, answer.status.code >= 500 || answer.status.code == 429 {
                return .answered(await serveStale(stored, reason: .upstreamFailure, request))
            }
            return .answered(answer)
        case .failed(let error):
            if let stored, let reason = Self.staleReason(for: error) {
                return .answered(await serveStale(stored, reason: reason, request))
            }
            throw error
        }
    }

    /// A call of `key` on the wire has ended (a request gone alone, or a batch): the batch
    /// collecting behind it may go now.
    func batchCallLanded(_ key: RequestBatcher.Key) {
        guard let policy = configuration.batching[key.endpoint] else { return }
        follow(batcher.landed(key), key: key, policy: policy)
    }

    /// Does what a landing left to do: sends the batch that waited for it.
    private func follow(_ landing: RequestBatcher.Landing, key: RequestBatcher.Key, policy: BatchPolicy) {
        switch landing {
        case .nothing:
            break
        case .sends(let batch, let entries):
            Task { await self.sendBatch(entries, of: batch, key: key, policy: policy) }
        }
    }

    /// Closes `batch` once its wait has passed on the gate's clock since its first member joined
    /// and no call of its key is on the wire, unless it filled or emptied first, and sends it.
    /// While calls are on the wire the timer stops; the last to land sends it.
    private func startTimer(
        _ batch: RequestBatcher.Batch, key: RequestBatcher.Key, policy: BatchPolicy
    ) {
        batch.setTimer(Task { [clock, batcher] in
            // Each pass asks how long is left since the first join: the clock may have moved
            // before this task first ran.
            while true {
                switch batcher.timerFired(key, batch, wait: policy.wait, now: clock.now()) {
                case .closes(let entries):
                    await self.sendBatch(entries, of: batch, key: key, policy: policy)
                    return
                case .closedAlready, .waitsForCallsAhead:
                    return
                case .waitsLonger(let more):
                    do { try await clock.sleep(for: more) } catch { return }
                }
            }
        })
    }

    /// Sends a closed batch as one call and hands each member its answer.
    private func sendBatch(
        _ entries: [RequestBatcher.Batch.Entry], of batch: RequestBatcher.Batch, key: RequestBatcher.Key,
        policy: BatchPolicy
    ) async {
        guard entries.count > 1, let first = entries.first else {
            // Alone after all (the others left): it goes on as a single request, and lands the
            // call when it ends; if it has gone too, the call ends here.
            if !(entries.first.map { batch.deliver(.alone(landsCall: true), to: $0.ticket) } ?? false) {
                batchCallLanded(key)
            }
            return
        }
        defer { batchCallLanded(key) }
        let splitter = BatchSplitter(policy: policy)
        var ids: [String] = []
        var rawValues: [String] = []
        for entry in entries where !ids.contains(entry.member.share.id) {
            ids.append(entry.member.share.id)
            rawValues.append(entry.member.share.rawValue)
        }
        var combined = first.member.request
        combined.path = splitter.combinedTarget(combined.path ?? "", ids: rawValues)
        // The batch's answer is read to be split: it may come compressed (the members asked
        // for gzip, as curl --compressed and Python's requests do), but only in a coding the gate
        // can undo.
        ContentDecoding.limitAcceptEncoding(&combined.headerFields)
        var options = key.options
        // Read whole, to be split.
        options.streamsLargeBodies = false
        options.streamsBodies = false
        var call = GateRequest(request: combined, body: nil, endpoint: key.endpoint, options: options,
                               transport: first.member.transport, revalidation: .bypassingCache, logger: logger)
        call.batchedIDs = ids.count
        logger.debug("sending a batch", metadata: ["gate.endpoint": "\(key.endpoint)", "gate.batch_ids": "\(ids.count)",
                                                   "gate.batch_requests": "\(entries.count)"])
        let sentAt = clock.now()
        let answer: GateResponse
        do {
            answer = try await route(&call)
        } catch {
            for entry in entries { batch.deliver(.failed(error), to: entry.ticket) }
            return
        }
        // The call's cost and attempts are reported once, by the member that came first.
        func reported(_ response: HTTPResponse, _ body: Data, index: Int) -> GateResponse {
            GateResponse(response: response, body: body, source: .network,
                         unitsCharged: index == 0 ? answer.unitsCharged : 0, attempts: index == 0 ? answer.attempts : 0,
                         age: nil)
        }
        guard (200..<300).contains(answer.status.code), answer.bodyStream == nil else {
            // Nothing to split (an error, a redirect): every member gets it as it came, stored for none.
            for (index, entry) in entries.enumerated() {
                batch.deliver(.answered(reported(answer.response, answer.body, index: index)), to: entry.ticket)
            }
            return
        }
        let bodies: [String: Data]
        do {
            bodies = try Self.split(answer, ids: ids, by: splitter)
        } catch {
            logger.warning("batching: the answer could not be split; each request is sent alone",
                           metadata: ["gate.endpoint": "\(key.endpoint)", "error": "\(error)"])
            for entry in entries { batch.deliver(.alone(landsCall: false), to: entry.ticket) }
            return
        }
        for (index, entry) in entries.enumerated() {
            let body = bodies[entry.member.share.id] ?? Data()
            let response = Self.memberResponse(answer.response, body: body)
            storeBatchedAnswer(response, body: body, for: entry.member.request, endpoint: key.endpoint, sentAt: sentAt)
            batch.deliver(.answered(reported(response, body, index: index)), to: entry.ticket)
        }
    }

    /// The batch's answer split by ID, from its body with its `Content-Encoding` undone; or from
    /// the body as it came, when that is what splits: a transport may have decoded it already and
    /// left `Content-Encoding` naming the coding (URLSession does).
    /// - Throws: ``BatchSplitError``: ``BatchSplitError/undecodableBody(contentEncoding:)`` when the
    ///   coding could not be undone and the body as it came does not split either.
    private static func split(_ answer: GateResponse, ids: [String], by splitter: BatchSplitter) throws -> [String: Data] {
        let fields = answer.response.headerFields
        let decoded = ContentDecoding.decoded(answer.body, fields: fields)
        if let decoded, decoded != answer.body, let bodies = try? splitter.split(decoded, ids: ids) { return bodies }
        do {
            return try splitter.split(answer.body, ids: ids)
        } catch {
            throw decoded == nil ? BatchSplitError.undecodableBody(contentEncoding: fields[values: .contentEncoding]) : error
        }
    }

    /// A member's response head: the batch's, without what describes the batch's body alone
    /// (its validators, coding, digests and length), so a member's stored answer is never
    /// revalidated by the batch's entity tag, and its identity-coded body is not labelled with the
    /// batch's `Content-Encoding`.
    static func memberResponse(_ response: HTTPResponse, body: Data) -> HTTPResponse {
        var member = response
        let hadLength = member.headerFields[.contentLength] != nil
        for name in batchBodyFields { member.headerFields[name] = nil }
        member.headerFields[.contentLength] = hadLength ? String(body.count) : nil
        return member
    }

    /// Fields that describe the batch's body as it came, not a member's split from its decoded form.
    private static let batchBodyFields: [HTTPField.Name] = [
        .eTag, .lastModified, .contentEncoding, .contentLength, .contentRange,
        HTTPField.Name("Content-MD5")!, HTTPField.Name("Content-Digest")!, HTTPField.Name("Repr-Digest")!,
        HTTPField.Name("Digest")!,
    ]

    /// Queues the cache's store of a member's answer under the member's own key, so a lookup of
    /// it waits for the write.
    private func storeBatchedAnswer(
        _ response: HTTPResponse, body: Data, for request: HTTPRequest, endpoint: String, sentAt: Date
    ) {
        afterAnswerWrites.enqueue(resource: try? cache.key(for: request).resourceKey) { [self] in
            do {
                _ = try await cache.storeResponse(response, body: body, for: request, endpoint: endpoint,
                                                  requestedAt: sentAt, bookkeeping: AnswerBookkeeping())
            } catch {
                logger.warning("could not store a batched answer in the cache",
                               metadata: ["gate.endpoint": "\(endpoint)", "error": "\(error)"])
            }
        }
    }

    /// Why a stored response stands in for a batch's refusal or failure; nil when it may not.
    private static func staleReason(for error: any Error) -> StaleReason? {
        switch error {
        case TollgateError.circuitOpen: .circuitOpen
        case TollgateError.throttled: .throttled
        case TollgateError.quotaExceeded: .quotaExhausted
        case is HTTPTransportError: .upstreamFailure
        default: nil
        }
    }
}
