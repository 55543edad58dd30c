import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateTestSupport

@Suite("Coalescing: the same request from many places reaches the API once")
struct CoalescingTests {
    /// A slow origin that answers as YouTube does: an ETag, and `max-age=0, must-revalidate`.
    static func slowOrigin(latency: useconds_t, cacheControl: String = "private, max-age=0, must-revalidate, no-transform") throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { _ in
            usleep(latency)
            return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", cacheControl)], body: "the one answer")
        }
    }

    @Test("50 tasks asking at once for one slow resource send one request; 49 get its answer, coalesced, at no cost",
          arguments: TransportKind.allCases)
    func withinOneProcess(kind: TransportKind) async throws {
        let origin = try Self.slowOrigin(latency: 300_000)
        defer { origin.stop() }
        let harness = try ScriptedGate(kind)
        let url = URL(string: "\(origin.baseURL)/youtube/v3/videos?id=1")!
        let gate = harness.gate
        let answers = try await withThrowingTaskGroup(of: GateResponse.self) { group in
            for _ in 0..<50 { group.addTask { try await gate.send(HTTPRequest(url: url), endpoint: "videos.list") } }
            return try await group.reduce(into: [GateResponse]()) { $0.append($1) }
        }
        #expect(origin.requests.count == 1)
        #expect(answers.filter { $0.source == .network }.count == 1)
        #expect(answers.filter { $0.source == .coalesced }.count == 49)
        #expect(answers.allSatisfy { $0.body == Data("the one answer".utf8) })
        #expect(answers.map(\.unitsCharged).reduce(0, +) == 1)
        try await harness.gate.flush()
        let stats = try await harness.store.cacheStatistics(pacificDate: nil)
        #expect(stats.first?.counts.coalesced == 49)
        #expect(try await harness.store.coalescingLease(resourceKey: harness.gate.cache.key(for: HTTPRequest(url: url)).resourceKey) == nil,
                "the lease is given back")
    }

    @Test("a waiter whose leader got nothing storable sends its own request")
    func leaderWithoutStorableAnswer() async throws {
        let origin = try ScriptedHTTPServer { _ in
            usleep(100_000)
            return .init(headers: [("Cache-Control", "no-store")], body: "not for keeping")
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(.asyncHTTPClient)
        let url = URL(string: "\(origin.baseURL)/youtube/v3/videos?id=2")!
        let gate = harness.gate
        let answers = try await withThrowingTaskGroup(of: GateResponse.self) { group in
            for _ in 0..<3 { group.addTask { try await gate.send(HTTPRequest(url: url), endpoint: "videos.list") } }
            return try await group.reduce(into: [GateResponse]()) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.source == .network && $0.body == Data("not for keeping".utf8) })
        #expect(origin.requests.count == 3)
    }

    @Test("6 processes of 50 tasks each asking for one slow resource at once send one request")
    func acrossProcesses() async throws {
        let origin = try Self.slowOrigin(latency: 2_500_000, cacheControl: "private, max-age=600")
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.path("coalesce.sqlite")
        _ = try SQLiteStore(path: path)
        let url = "\(origin.baseURL)/youtube/v3/videos?id=1"
        let startAt = Int64((Date().timeIntervalSince1970 + 2) * 1000)
        let results = try await WorkerProcess.runConcurrently("gate-coalesce", count: 6) { _ in
            [path, url, "50", String(startAt)]
        }
        var totals: [String: Int] = [:]
        for result in results {
            #expect(result.status == 0, "\(result.stderr)")
            let fields = result.stdout.split(whereSeparator: \.isWhitespace)
            for index in stride(from: 0, to: fields.count - 1, by: 2) {
                totals[String(fields[index]), default: 0] += Int(fields[index + 1]) ?? 0
            }
        }
        #expect(origin.requests.count == 1, "\(totals)")
        #expect(totals["network"] == 1)
        #expect(totals["other"] == 0)
        #expect((totals["coalesced"] ?? 0) + (totals["cache"] ?? 0) == 299)
        #expect((totals["coalesced"] ?? 0) > 49, "other processes waited for the leader too: \(totals)")
    }

    /// A gate over a fresh file on a manual clock, waiting at most 5 s for an identical request,
    /// batching nothing (a batch's collecting timer would sleep on the clock too).
    static func manualGate(_ clock: ManualClock, in directory: TemporaryDirectory) throws -> (Gate, SQLiteStore) {
        let store = try SQLiteStore(path: directory.path("gate.sqlite"))
        var configuration = GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000)
        configuration.cache.coalescingWait = .seconds(5)
        configuration.batching = [:]
        return (try Gate(store: store, transport: URLSessionTransport(), configuration: configuration, clock: clock), store)
    }

    @Test("a waiter's patience is on the gate's clock: stepped past it, the waiter sends its own request while the leader's is still out")
    func waiterGivesUpOnTheClock() async throws {
        // The first request is held at the origin until the test lets it go.
        let release = DispatchSemaphore(value: 0)
        let origin = try ScriptedHTTPServer { request in
            if request.header("X-Leader") != nil { _ = release.wait(timeout: .now() + 30) }
            return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", "private, max-age=0, must-revalidate")],
                         body: "the one answer")
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let clock = ManualClock(now: Date())
        let (gate, _) = try Self.manualGate(clock, in: directory)
        let url = URL(string: "\(origin.baseURL)/youtube/v3/videos?id=1")!
        var leading = HTTPRequest(url: url)
        leading.headerFields[HTTPField.Name("X-Leader")!] = "1"
        // The cache key does not see X-Leader: both are one resource.
        let leader = Task { try await gate.send(leading, endpoint: "videos.list") }
        defer { release.signal() }
        #expect(await eventually { origin.requests.count == 1 }, "the leader's request reached the origin")
        let waiter = Task { try await gate.send(HTTPRequest(url: url), endpoint: "videos.list") }
        #expect(await eventually { clock.sleeperCount == 1 }, "the waiter waits on the gate's clock")
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1 && origin.requests.count == 1, "4 s of 5: still waiting")
        clock.advance(by: .seconds(1))
        let alone = try await waiter.value
        #expect(alone.source == .network)
        #expect(origin.requests.count == 2, "the waiter sent its own request; the leader's is still held")
        release.signal()
        #expect(try await leader.value.source == .network)
    }

    @Test("a request waiting for another process's answer looks and gives up on the gate's clock: held while it stands, sent once stepped past the wait")
    func otherProcessWaitOnTheClock() async throws {
        let origin = try Self.slowOrigin(latency: 0)
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let clock = ManualClock(now: Date())
        let (gate, store) = try Self.manualGate(clock, in: directory)
        let request = HTTPRequest(url: URL(string: "\(origin.baseURL)/youtube/v3/videos?id=1")!)
        // Another process leads this resource's fetch (its lease runs 60 s) and never answers.
        let startedMs = Int64(clock.now().timeIntervalSince1970 * 1000)
        _ = try await store.acquireCoalescingLease(
            resourceKey: try gate.cache.key(for: request).resourceKey,
            lease: CoalescingLease(holder: "another process", startedMs: startedMs, expiresMs: startedMs + 60_000))
        let sent = Task { try await gate.send(request, endpoint: "videos.list") }
        #expect(await eventually { clock.sleeperCount == 1 }, "the wait sleeps on the gate's clock")
        // Each step wakes one look at the store; the lease stands, so it waits again.
        for _ in 0..<3 {
            clock.advance(by: .seconds(1))
            #expect(await eventually { clock.sleeperCount == 1 })
        }
        #expect(origin.requests.isEmpty, "3 s of 5: still waiting for the other process")
        clock.advance(by: .seconds(2))
        let answer = try await sent.value
        #expect(answer.source == .network)
        #expect(origin.requests.count == 1)
    }
}
