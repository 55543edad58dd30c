import Foundation
import HTTPTypes
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Tollgate
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

    init(behaviour: FakeAPIBehaviour = Self.cacheable, configure: (inout GateConfiguration) -> Void = { _ in }) async throws {
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
        gate = try Gate(store: store, transport: URLSessionTransport(timeout: .seconds(20)), configuration: configuration,
                        clock: clock)
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

    /// Sends each request in a task of its own; once `joining` of them wait in batches, steps the
    /// clock past the batches' wait.
    func sendAll(_ requests: [HTTPRequest], joining: Int? = nil) async -> [Result<GateResponse, any Error>] {
        let tasks = start(requests)
        let expected = joining ?? requests.count
        #expect(await eventually { gate.batcher.openMembers == expected }, "every request waits in a batch")
        clock.advance(by: .milliseconds(10))
        var results: [Result<GateResponse, any Error>] = []
        for task in tasks { results.append(await task.result) }
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
    @Test("ten lookups at once reach the API as one call of ten IDs for one unit; each caller gets its own item, cached under its own key")
    func tenAsOne() async throws {
        let harness = try await BatchingHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let ids = (0..<10).map { "v\($0)" }
            let results = await harness.sendAll(ids.map { harness.video($0) })
            let received = harness.api.receivedRequests
            #expect(received.count == 1)
            let query = try #require(received.first?.query)
            let sent = try #require(query.split(separator: "&").first { $0.hasPrefix("id=") })
            #expect(Set(sent.dropFirst(3).split(separator: ",").map(String.init)) == Set(ids))
            #expect(harness.api.unitsUsed == 1)
            var charged = 0
            for (id, result) in zip(ids, results) {
                let answer = try result.get()
                #expect(answer.status == .ok)
                #expect(answer.source == .network)
                #expect(answer.response.headerFields[.eTag] == nil, "the batch's validator is not the member's")
                charged += answer.unitsCharged
                let items = try BatchingHarness.items(answer.body)
                #expect(items.count == 1)
                #expect(items.first?["id"] as? String == id)
                #expect(items == (try await harness.originItems(id)), "what the origin answers for \(id) alone")
            }
            #expect(charged == 1)
            try await harness.gate.flush()
            let usage = try await harness.store.quotaUsage(on: PacificDay(containing: harness.clock.now()))
            let videos = try #require(usage.first { $0.endpoint == "videos.list" })
            #expect(videos.units == 1)
            #expect(videos.calls == 1, "the batch is one call in the ledger")

            // A repeat of one of them is a fresh hit under its own key: no batch, no request.
            let repeating = harness.start([harness.video("v7")])[0]
            // Bounded: a repeat that is not a cache hit would wait for a clock no one moves.
            let deadline = Task { try await Task.sleep(for: .seconds(10)); repeating.cancel() }
            let repeated = try await repeating.value
            deadline.cancel()
            #expect(repeated.source == .cache)
            #expect(try BatchingHarness.items(repeated.body).first?["id"] as? String == "v7")
            #expect(harness.api.receivedRequests.count == 11, "the batch and the test's ten direct requests to the origin")
        }
    }

    @Test("an ID the API does not know gets a 200 with no items, as a call for it alone would")
    func unknownID() async throws {
        var behaviour = BatchingHarness.cacheable
        behaviour.unknownIDs = ["gone"]
        let harness = try await BatchingHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let results = await harness.sendAll([harness.video("v1"), harness.video("gone")])
            #expect(harness.api.receivedRequests.count == 1)
            let known = try results[0].get()
            let unknown = try results[1].get()
            #expect(try BatchingHarness.items(known.body).map { $0["id"] as? String } == ["v1"])
            #expect(unknown.status == .ok)
            #expect(try BatchingHarness.items(unknown.body).isEmpty)
            #expect(try await harness.originItems("gone").isEmpty)
        }
    }

    @Test("requests that differ in another parameter (part) never share a batch")
    func differentPartsApart() async throws {
        let harness = try await BatchingHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let requests = [harness.video("v1"), harness.video("v2", part: "statistics"), harness.video("v3"),
                            harness.video("v4", part: "statistics")]
            let results = await harness.sendAll(requests)
            let received = harness.api.receivedRequests
            #expect(received.count == 2)
            for request in received {
                let parts = request.query.split(separator: "&").filter { $0.hasPrefix("part=") }
                #expect(parts.count == 1)
                let ids = request.query.split(separator: "&").first { $0.hasPrefix("id=") }.map(String.init)
                if parts.first == "part=snippet" { #expect(ids == "id=v1,v3" || ids == "id=v3,v1") }
                else { #expect(ids == "id=v2,v4" || ids == "id=v4,v2") }
            }
            for (index, result) in results.enumerated() {
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
        behaviour.dailyQuota = 0
        let harness = try await BatchingHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let results = await harness.sendAll((1...3).map { harness.video("v\($0)") })
            #expect(harness.api.receivedRequests.count == 1)
            for result in results {
                #expect(throws: TollgateError.self) { try result.get() }
                guard case .failure(TollgateError.quotaExceeded(let endpoint, _, let remaining, _)) = result else {
                    Issue.record("expected quotaExceeded, got \(result)")
                    continue
                }
                #expect(endpoint == "videos.list")
                #expect(remaining == 0)
            }
        }
    }

    @Test("a caller cancelled while its batch waits leaves it: its ID is not sent, the others get their answers")
    func cancelledBeforeSending() async throws {
        let harness = try await BatchingHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let tasks = harness.start(["v1", "v2", "v3"].map { harness.video($0) })
            #expect(await eventually { harness.gate.batcher.openMembers == 3 })
            tasks[1].cancel()
            #expect(await eventually { harness.gate.batcher.openMembers == 2 })
            harness.clock.advance(by: .milliseconds(10))
            #expect(await tasks[1].result.failure is CancellationError)
            let first = try await tasks[0].value
            #expect(try BatchingHarness.ids(first) == ["v1"])
            let third = try await tasks[2].value
            #expect(try BatchingHarness.ids(third) == ["v3"])
            let query = try #require(harness.api.receivedRequests.first?.query)
            #expect(query.contains("id=v1,v3"))
        }
    }

    @Test("a caller cancelled while its batch is on the wire does not change the others' answers")
    func cancelledInFlight() async throws {
        var behaviour = BatchingHarness.cacheable
        behaviour.latency = .milliseconds(300)
        let harness = try await BatchingHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let tasks = harness.start(["v1", "v2", "v3"].map { harness.video($0) })
            #expect(await eventually { harness.gate.batcher.openMembers == 3 })
            harness.clock.advance(by: .milliseconds(10))
            #expect(await eventually { harness.gate.batcher.openMembers == 0 })
            tasks[0].cancel()
            #expect(await tasks[0].result.failure is CancellationError)
            for (index, id) in [(1, "v2"), (2, "v3")] {
                let answer = try await tasks[index].value
                #expect(try BatchingHarness.ids(answer) == [id])
            }
            #expect(harness.api.receivedRequests.count == 1)
            let sent = harness.api.receivedRequests.first?.query.split(separator: "&").first { $0.hasPrefix("id=") }
            #expect(sent.map { Set($0.dropFirst(3).split(separator: ",").map(String.init)) } == ["v1", "v2", "v3"])
        }
    }

    @Test("a full batch is sent at once, without waiting")
    func fullBatchAtOnce() async throws {
        let harness = try await BatchingHarness { configuration in
            configuration.batching["videos.list"]?.maximum = 3
        }
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let tasks = harness.start(["v1", "v2", "v3"].map { harness.video($0) })
            // The clock never moves: only the full batch's own send answers them.
            for (task, id) in zip(tasks, ["v1", "v2", "v3"]) {
                let answer = try await task.value
                #expect(try BatchingHarness.ids(answer) == [id])
            }
            #expect(harness.api.receivedRequests.count == 1)
            #expect(harness.clock.sleeperCount == 0, "the full batch's wait was stopped")
        }
    }

    @Test("a 503 is retried once for the whole batch, by the endpoint's retry policy")
    func retriedAsOne() async throws {
        var behaviour = BatchingHarness.cacheable
        behaviour.outage = FakeAPIBehaviour.Outage(status: 503, count: 1)
        let harness = try await BatchingHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let tasks = harness.start(["v1", "v2"].map { harness.video($0) })
            #expect(await eventually { harness.gate.batcher.openMembers == 2 })
            harness.clock.advance(by: .milliseconds(10))
            #expect(await eventually { harness.clock.sleeperCount == 1 }, "the batch waits for its retry")
            harness.clock.advance(by: .seconds(1))
            for (task, id) in zip(tasks, ["v1", "v2"]) {
                let answer = try await task.value
                #expect(try BatchingHarness.ids(answer) == [id])
            }
            let received = harness.api.receivedRequests
            #expect(received.map(\.status) == [503, 200])
            #expect(received.allSatisfy { $0.query.contains("id=v1,v2") || $0.query.contains("id=v2,v1") })
        }
    }

    @Test("the URLSession drop-in batches its tasks: five lookups at once, one call")
    func urlSessionDropIn() async throws {
        let harness = try await BatchingHarness { configuration in
            // Full at five, sent at once: the test never waits for the clock.
            configuration.batching["videos.list"]?.maximum = 5
        }
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            // `localhost`: the drop-in's routes are per host and process-wide, and the drop-in's own
            // suite, which may run beside this one, routes 127.0.0.1 to its gate.
            let session = URLSession(configuration: .tollgated(by: harness.gate, hosts: ["localhost"]))
            defer { session.finishTasksAndInvalidate() }
            let ids = (1...5).map { "v\($0)" }
            let bodies = try await withThrowingTaskGroup(of: (String, Data).self) { group in
                for id in ids {
                    let url = URL(string: harness.api.url("videos", ["id": id, "part": "snippet"]).absoluteString
                        .replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:"))!
                    group.addTask { (id, try await session.data(from: url).0) }
                }
                return try await group.reduce(into: [String: Data]()) { $0[$1.0] = $1.1 }
            }
            for id in ids {
                let body = try #require(bodies[id])
                #expect(try BatchingHarness.items(body).map { $0["id"] as? String } == [id])
            }
            #expect(harness.api.receivedRequests.count == 1)
        }
    }

    @Test("a request alone in its batch goes on as a single request, revalidating its own stored answer")
    func aloneIsASingleRequest() async throws {
        let harness = try await BatchingHarness(behaviour: FakeAPIBehaviour())
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let first = await harness.sendAll([harness.video("v1")])
            let firstAnswer = try first[0].get()
            #expect(firstAnswer.response.headerFields[.eTag] != nil, "the origin's own answer, validator and all")
            let second = await harness.sendAll([harness.video("v1")])
            let secondAnswer = try second[0].get()
            #expect(secondAnswer.source == .revalidated)
            #expect(harness.api.receivedRequests.map(\.query) == ["id=v1&part=snippet", "id=v1&part=snippet"])
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
