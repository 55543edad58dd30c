import Foundation
import HTTPTypes
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Tollgate
import TollgateAsyncHTTPClient
import TollgateFakeAPI
import TollgateTestSupport

/// A gate with the YouTube preset (whose list methods batch) over a fresh file, the fake YouTube
/// API and a manual clock: a batch waits until the test has every request in it, then steps the clock.
struct BatchingHarness {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let api: FakeYouTubeAPI
    let clock: ManualClock
    let gate: Gate

    init(behaviour: FakeAPIBehaviour = Self.cacheable, transport: any HTTPTransport = URLSessionTransport(timeout: .seconds(20)),
         configure: (inout GateConfiguration) -> Void = { _ in }) async throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("gate.sqlite"))
        api = try await FakeYouTubeAPI.start(behaviour: behaviour)
        // Now: the fake API dates its answers by the real clock, and their freshness counts from that Date.
        clock = ManualClock(now: Date())
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: 10_000, per: .seconds(60)))
        configuration.retry.jitter = 0
        configuration.maximumThrottleWait = .zero
        configure(&configuration)
        gate = try Gate(store: store, transport: transport, configuration: configuration, clock: clock)
    }

    /// Answers fresh for 5 minutes, so a repeat is a cache hit.
    static var cacheable: FakeAPIBehaviour {
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 300
        return behaviour
    }

    func video(_ id: String, part: String = "snippet") -> HTTPRequest {
        HTTPRequest(url: api.url("videos", ["id": id, "part": part]))
    }

    /// Sends `first` alone and holds its answer, so that it is on the wire while `others` arrive
    /// and collect in batches behind it; once they all wait, steps the clock past the batches'
    /// wait and lets the first answer go: the batches follow it.
    /// - Returns: The first request's outcome, then the others', in order.
    func sendBehind(_ first: HTTPRequest, _ others: [HTTPRequest]) async -> [Result<GateResponse, any Error>] {
        await sendBehind([first], others)
    }

    /// ``sendBehind(_:_:)`` with several requests first, each alone in its own batch key.
    func sendBehind(_ firsts: [HTTPRequest], _ others: [HTTPRequest]) async -> [Result<GateResponse, any Error>] {
        api.holdAnswers()
        let leading = start(firsts)
        #expect(await eventually { api.heldAnswerCount == firsts.count }, "the first requests are on the wire")
        let following = start(others)
        #expect(await eventually { gate.batcher.collectingMembers == others.count }, "the others wait in batches")
        // Each batch's timer sleeps on the clock before it is stepped.
        let batches = Set(others.map { $0.path?.split(separator: "&").filter { $0.hasPrefix("part=") } ?? [] }).count
        #expect(await eventually { clock.sleeperCount == batches }, "each batch's timer waits")
        clock.advance(by: .milliseconds(10))
        api.releaseHeldAnswers()
        var results: [Result<GateResponse, any Error>] = []
        for task in leading + following { results.append(await task.result) }
        return results
    }

    /// Sends each request in a task of its own.
    func start(_ requests: [HTTPRequest]) -> [Task<GateResponse, any Error>] {
        let gate = self.gate
        return requests.map { request in
            Task { () async throws -> GateResponse in try await gate.send(request, endpoint: "videos.list") }
        }
    }

    /// The items of the origin's own answer for `id` alone, asked directly.
    func originItems(_ id: String, part: String = "snippet") async throws -> [NSDictionary] {
        let (data, _) = try await URLSession.shared.data(from: api.url("videos", ["id": id, "part": part]))
        return try Self.items(data)
    }

    /// The IDs of the items in an answer's body.
    static func ids(_ answer: GateResponse) throws -> [String?] {
        try items(answer.body).map { $0["id"] as? String }
    }

    static func items(_ body: Data) throws -> [NSDictionary] {
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        return try #require(object["items"] as? [NSDictionary])
    }

    func stop() async { await api.stop() }
}

@Suite("Batching: single-ID lookups sent as one call and split back", .serialized)
struct BatchingTests {
    /// The IDs a call to the origin asked for.
    static func sentIDs(_ request: FakeAPIReceivedRequest) -> [String] {
        let ids = request.query.split(separator: "&").first { $0.hasPrefix("id=") }
        return ids.map { $0.dropFirst(3).split(separator: ",").map(String.init) } ?? []
    }

    @Test("ten lookups at once: the first goes at once; the nine that arrive while it is on the wire go as one call of nine IDs for one unit; each caller gets its own item, cached under its own key")
    func tenAsTwo() async throws {
        let harness = try await BatchingHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            let ids = (0..<10).map { "v\($0)" }
            let results = await harness.sendBehind(harness.video(ids[0]), ids.dropFirst().map { harness.video($0) })
            let received = harness.api.receivedRequests
            #expect(received.count == 2)
            #expect(received.map(Self.sentIDs).first == ["v0"])
            #expect(Set(received.map(Self.sentIDs).last ?? []) == Set(ids.dropFirst()))
            #expect(harness.api.unitsUsed == 2)
            var charged = 0
            for (id, result) in zip(ids, results) {
                let answer = try result.get()
                #expect(answer.status == .ok)
                #expect(answer.source == .network)
                if id != "v0" { #expect(answer.response.headerFields[.eTag] == nil, "the batch's validator is not the member's") }
                charged += answer.unitsCharged
                let items = try BatchingHarness.items(answer.body)
                #expect(items.count == 1)
                #expect(items.first?["id"] as? String == id)
                #expect(items == (try await harness.originItems(id)), "what the origin answers for \(id) alone")
                let page = try #require(try JSONSerialization.jsonObject(with: answer.body) as? NSDictionary)["pageInfo"]
                #expect(page as? NSDictionary == ["totalResults": 1, "resultsPerPage": 1], "its own page counts")
            }
            #expect(charged == 2)
            try await harness.gate.flush()
            let usage = try await harness.store.quotaUsage(on: PacificDay(containing: harness.clock.now()))
            let videos = try #require(usage.first { $0.endpoint == "videos.list" })
            #expect(videos.units == 2)
            #expect(videos.calls == 2, "the batch is one call in the ledger")
            let details = try harness.store.read { db in
                try db.fetchAll(sql: "SELECT detail FROM quota_events WHERE kind = 'charge' ORDER BY id").map { $0[0].string }
            }
            #expect(details == [nil, "batch of 9 IDs"], "the batch's charge says how many IDs it carried")

            // A repeat of one of them is a fresh hit under its own key: no batch, no request.
            let repeated = try await harness.gate.send(harness.video("v7"), endpoint: "videos.list")
            #expect(repeated.source == .cache)
            #expect(try BatchingHarness.items(repeated.body).first?["id"] as? String == "v7")
            #expect(harness.api.receivedRequests.count == 12, "the two calls and the test's ten direct requests to the origin")
        }
    }

    @Test("a lone lookup goes at once, as a single request: it waits for nothing, and revalidates its own stored answer")
    func aloneIsASingleRequest() async throws {
        let harness = try await BatchingHarness(behaviour: FakeAPIBehaviour())
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            let first = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(first.response.headerFields[.eTag] != nil, "the origin's own answer, validator and all")
            let second = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(second.source == .revalidated)
            let third = try await harness.gate.send(harness.video("v2"), endpoint: "videos.list")
            #expect(try BatchingHarness.ids(third) == ["v2"])
            #expect(harness.api.receivedRequests.map(\.query) == ["id=v1&part=snippet", "id=v1&part=snippet", "id=v2&part=snippet"])
            #expect(harness.clock.sleeps.isEmpty, "no wait on the clock without concurrency")
        }
    }

    @Test("an ID the API does not know gets a 200 with no items, as a call for it alone would")
    func unknownID() async throws {
        var behaviour = BatchingHarness.cacheable
        behaviour.unknownIDs = ["gone"]
        let harness = try await BatchingHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            let results = await harness.sendBehind(harness.video("v0"), [harness.video("v1"), harness.video("gone")])
            let received = harness.api.receivedRequests
            #expect(received.count == 2)
            #expect(Set(received.last.map(Self.sentIDs) ?? []) == ["v1", "gone"])
            let known = try results[1].get()
            let unknown = try results[2].get()
            #expect(try BatchingHarness.ids(known) == ["v1"])
            #expect(unknown.status == .ok)
            #expect(try BatchingHarness.items(unknown.body).isEmpty)
            #expect(try await harness.originItems("gone").isEmpty)
        }
    }

    @Test("requests that differ in another parameter (part) never share a batch")
    func differentPartsApart() async throws {
        let harness = try await BatchingHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            let firsts = [harness.video("v0"), harness.video("v9", part: "statistics")]
            let others = [harness.video("v1"), harness.video("v2", part: "statistics"), harness.video("v3"),
                          harness.video("v4", part: "statistics")]
            let results = await harness.sendBehind(firsts, others)
            let batches = harness.api.receivedRequests.filter { Self.sentIDs($0).count > 1 }
            #expect(harness.api.receivedRequests.count == 4, "two alone, one batch for each part")
            #expect(batches.count == 2)
            for request in batches {
                let parts = request.query.split(separator: "&").filter { $0.hasPrefix("part=") }
                #expect(parts.count == 1)
                let ids = Set(Self.sentIDs(request))
                if parts.first == "part=snippet" { #expect(ids == ["v1", "v3"]) } else { #expect(ids == ["v2", "v4"]) }
            }
            for (index, result) in results.dropFirst(2).enumerated() {
                let item = try #require(try BatchingHarness.items(try result.get().body).first)
                let part = index % 2 == 0 ? "snippet" : "statistics"
                #expect(item[part] != nil)
                #expect(item.count == 5, "kind, id, revision, etag and the one part asked for")
            }
        }
    }

    @Test("a batch answered 403 quotaExceeded gives every caller the quota error, for the one attempt")
    func quotaExceededFansOut() async throws {
        var behaviour = BatchingHarness.cacheable
        // The first lookup spends the origin's last unit; the batch behind it finds none.
        behaviour.dailyQuota = 1
        let harness = try await BatchingHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            let results = await harness.sendBehind(harness.video("v0"), (1...3).map { harness.video("v\($0)") })
            #expect(try BatchingHarness.ids(try results[0].get()) == ["v0"])
            let received = harness.api.receivedRequests
            #expect(received.count == 2)
            #expect(received.last?.status == 403)
            #expect(Set(received.last.map(Self.sentIDs) ?? []) == ["v1", "v2", "v3"])
            for result in results.dropFirst() {
                guard case .failure(TollgateError.quotaExceeded(let endpoint, _, let remaining, _)) = result else {
                    Issue.record("expected quotaExceeded, got \(result)")
                    continue
                }
                #expect(endpoint == "videos.list")
                #expect(remaining == 0)
            }
        }
    }

    @Test("a caller cancelled while its batch collects leaves it: its ID is not sent, the others get their answers")
    func cancelledBeforeSending() async throws {
        let harness = try await BatchingHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            harness.api.holdAnswers()
            let first = harness.start([harness.video("v0")])[0]
            #expect(await eventually { harness.api.heldAnswerCount == 1 })
            let tasks = harness.start(["v1", "v2", "v3"].map { harness.video($0) })
            #expect(await eventually { harness.gate.batcher.collectingMembers == 3 })
            tasks[1].cancel()
            #expect(await eventually { harness.gate.batcher.collectingMembers == 2 })
            #expect(await eventually { harness.clock.sleeperCount == 1 }, "the batch's timer sleeps on the clock")
            harness.clock.advance(by: .milliseconds(10))
            harness.api.releaseHeldAnswers()
            #expect(await tasks[1].result.failure is CancellationError)
            #expect(try BatchingHarness.ids(try await first.value) == ["v0"])
            #expect(try BatchingHarness.ids(try await tasks[0].value) == ["v1"])
            #expect(try BatchingHarness.ids(try await tasks[2].value) == ["v3"])
            // The three started together, so they reach the batch in any order; v2 is never sent.
            #expect(harness.api.receivedRequests.map(Self.sentIDs).last.map(Set.init) == ["v1", "v3"])
        }
    }

    @Test("a caller cancelled while its batch is on the wire does not change the others' answers")
    func cancelledInFlight() async throws {
        let harness = try await BatchingHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            harness.api.holdAnswers()
            let first = harness.start([harness.video("v0")])[0]
            #expect(await eventually { harness.api.heldAnswerCount == 1 })
            let tasks = harness.start(["v1", "v2", "v3"].map { harness.video($0) })
            #expect(await eventually { harness.gate.batcher.collectingMembers == 3 })
            #expect(await eventually { harness.clock.sleeperCount == 1 }, "the batch's timer sleeps on the clock")
            harness.clock.advance(by: .milliseconds(10))
            // The first answer goes; the batch that follows it is held on the wire.
            harness.api.releaseHeldAnswers(holdingOn: true)
            #expect(await eventually { harness.api.receivedRequests.count == 2 && harness.api.heldAnswerCount == 1 })
            tasks[0].cancel()
            #expect(await tasks[0].result.failure is CancellationError)
            harness.api.releaseHeldAnswers()
            #expect(try BatchingHarness.ids(try await first.value) == ["v0"])
            for (index, id) in [(1, "v2"), (2, "v3")] {
                #expect(try BatchingHarness.ids(try await tasks[index].value) == [id])
            }
            #expect(harness.api.receivedRequests.count == 2)
            #expect(Set(harness.api.receivedRequests.map(Self.sentIDs).last ?? []) == ["v1", "v2", "v3"])
        }
    }

    @Test("a full batch is sent at once, without waiting for its wait or for the call ahead of it")
    func fullBatchAtOnce() async throws {
        let harness = try await BatchingHarness { configuration in
            configuration.batching["videos.list"]?.maximum = 3
        }
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            harness.api.holdAnswers()
            let first = harness.start([harness.video("v0")])[0]
            #expect(await eventually { harness.api.heldAnswerCount == 1 })
            let tasks = harness.start(["v1", "v2", "v3"].map { harness.video($0) })
            // The clock never moves and the first answer is held: only the full batch's own send reaches the origin.
            #expect(await eventually { harness.api.heldAnswerCount == 2 }, "the full batch is on the wire beside the first")
            harness.api.releaseHeldAnswers()
            #expect(try BatchingHarness.ids(try await first.value) == ["v0"])
            for (task, id) in zip(tasks, ["v1", "v2", "v3"]) {
                #expect(try BatchingHarness.ids(try await task.value) == [id])
            }
            #expect(harness.api.receivedRequests.count == 2)
            #expect(harness.clock.sleeperCount == 0, "the full batch's wait was stopped")
        }
    }

    @Test("a batch goes once its wait has passed since its first member joined: a request joining late does not hold it")
    func waitFromFirstJoin() async throws {
        let harness = try await BatchingHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            harness.api.holdAnswers()
            let first = harness.start([harness.video("v0")])[0]
            #expect(await eventually { harness.api.heldAnswerCount == 1 })
            var tasks = harness.start([harness.video("v1")])
            #expect(await eventually { harness.gate.batcher.collectingMembers == 1 })
            // The call ahead lands before the wait has passed: the batch still waits.
            harness.api.releaseHeldAnswers()
            _ = try await first.value
            #expect(await eventually { harness.clock.sleeperCount == 1 }, "the batch's timer sleeps on the clock")
            harness.clock.advance(by: .milliseconds(6))
            tasks += harness.start([harness.video("v2")])
            #expect(await eventually { harness.gate.batcher.collectingMembers == 2 })
            // 10 ms since v1 opened the batch, 4 since v2 joined: it goes now.
            harness.clock.advance(by: .milliseconds(4))
            let sent = await eventually { harness.api.receivedRequests.count == 2 }
            #expect(sent, "the batch went at its first member's arrival + wait, not later")
            // Lets a failing run end instead of hanging on the held batch.
            if !sent { harness.clock.advance(by: .seconds(1)) }
            for (task, id) in zip(tasks, ["v1", "v2"]) {
                #expect(try BatchingHarness.ids(try await task.value) == [id])
            }
            #expect(harness.api.receivedRequests.map(Self.sentIDs) == [["v0"], ["v1", "v2"]])
        }
    }

    @Test("callers that accept gzip, from an origin that gzips when asked: the batch goes asking for gzip, is decoded and split; each member gets its own item, identity-coded, its Content-Length its own body's, and a repeat is a consistent cache hit",
          arguments: TransportKind.allCases)
    func gzipOrigin(kind: TransportKind) async throws {
        var behaviour = BatchingHarness.cacheable
        behaviour.gzipsWhenAsked = true
        // AsyncHTTPClient decodes nothing, as the proxy's transport: the gate sees the gzip bytes.
        // URLSession hands over the decoded body with `Content-Encoding: gzip` still on it.
        let harness = try await BatchingHarness(behaviour: behaviour, transport: kind.make())
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            func gzipping(_ id: String) -> HTTPRequest {
                var request = harness.video(id)
                request.headerFields[.acceptEncoding] = "gzip, deflate"
                return request
            }
            let ids = (0..<6).map { "v\($0)" }
            let results = await harness.sendBehind(gzipping(ids[0]), ids.dropFirst().map(gzipping))
            let received = harness.api.receivedRequests
            #expect(received.map(Self.sentIDs).map(\.count) == [1, 5], "one alone and one batch, no member sent alone")
            #expect(received.allSatisfy { $0.headers["accept-encoding"]?.contains("gzip") == true }, "the batch asks for gzip too")
            #expect(harness.api.unitsUsed == 2)
            for (id, result) in zip(ids, results) {
                let answer = try result.get()
                #expect(answer.status == .ok)
                let fields = answer.response.headerFields
                let body: Data
                if id == "v0" {
                    // The lone call's answer passes as the transport gave it.
                    #expect(fields[.contentEncoding] == "gzip")
                    body = kind == .asyncHTTPClient ? try #require(ContentDecoding.decoded(answer.body, fields: fields)) : answer.body
                } else {
                    #expect(fields[.contentEncoding] == nil, "an identity body is not labelled gzip")
                    if let length = fields[.contentLength] { #expect(length == String(answer.body.count)) }
                    body = answer.body
                }
                #expect(try BatchingHarness.items(body) == (try await harness.originItems(id)), "what the origin answers for \(id) alone")
            }
            try await harness.gate.flush()
            let calls = harness.api.receivedRequests.count
            let repeated = try await harness.gate.send(gzipping("v3"), endpoint: "videos.list")
            #expect(repeated.source == .cache)
            #expect(repeated.response.headerFields[.contentEncoding] == nil)
            #expect(try BatchingHarness.ids(repeated) == ["v3"])
            #expect(harness.api.receivedRequests.count == calls, "the repeat never reached the origin")
        }
    }

    @Test("a 503 is retried once for the whole batch, by the endpoint's retry policy")
    func retriedAsOne() async throws {
        let harness = try await BatchingHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            harness.api.holdAnswers()
            let first = harness.start([harness.video("v0")])[0]
            #expect(await eventually { harness.api.heldAnswerCount == 1 })
            let tasks = harness.start(["v1", "v2"].map { harness.video($0) })
            #expect(await eventually { harness.gate.batcher.collectingMembers == 2 })
            #expect(await eventually { harness.clock.sleeperCount == 1 }, "the batch's timer sleeps on the clock")
            harness.clock.advance(by: .milliseconds(10))
            // The first was answered as it arrived; the batch after it meets an outage.
            harness.api.updateBehaviour { $0.outage = FakeAPIBehaviour.Outage(status: 503, count: 1) }
            harness.api.releaseHeldAnswers()
            #expect(try BatchingHarness.ids(try await first.value) == ["v0"])
            #expect(await eventually { harness.clock.sleeperCount == 1 }, "the batch waits for its retry")
            harness.clock.advance(by: .seconds(1))
            for (task, id) in zip(tasks, ["v1", "v2"]) {
                #expect(try BatchingHarness.ids(try await task.value) == [id])
            }
            let received = harness.api.receivedRequests
            #expect(received.map(\.status) == [200, 503, 200])
            #expect(received.dropFirst().allSatisfy { Set(Self.sentIDs($0)) == ["v1", "v2"] })
        }
    }

    @Test("the URLSession drop-in batches its tasks: six lookups at once, one alone and one call of five")
    func urlSessionDropIn() async throws {
        let harness = try await BatchingHarness { configuration in
            // Full at five, sent at once: the test never steps the clock.
            configuration.batching["videos.list"]?.maximum = 5
        }
        try await withStopping(harness, stop: { await $0.stop() }) { harness throws in
            // `localhost`: the drop-in's routes are per host and process-wide, and the drop-in's own
            // suite, which may run beside this one, routes 127.0.0.1 to its gate.
            let session = URLSession(configuration: .tollgated(by: harness.gate, hosts: ["localhost"]))
            defer { session.finishTasksAndInvalidate() }
            let ids = (1...6).map { "v\($0)" }
            // Held: whichever goes first stays on the wire while the other five fill a batch.
            harness.api.holdAnswers()
            let api = harness.api
            let bodies = try await withThrowingTaskGroup(of: (String, Data)?.self) { group in
                for id in ids {
                    let url = URL(string: api.url("videos", ["id": id, "part": "snippet"]).absoluteString
                        .replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:"))!
                    group.addTask { (id, try await session.data(from: url).0) }
                }
                group.addTask {
                    #expect(await eventually { api.heldAnswerCount == 2 }, "one alone and the full batch on the wire")
                    api.releaseHeldAnswers()
                    return nil
                }
                return try await group.reduce(into: [String: Data]()) { bodies, fetched in
                    if let (id, body) = fetched { bodies[id] = body }
                }
            }
            for id in ids {
                let body = try #require(bodies[id])
                #expect(try BatchingHarness.items(body).map { $0["id"] as? String } == [id])
            }
            #expect(harness.api.receivedRequests.map { Self.sentIDs($0).count }.sorted() == [1, 5])
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
