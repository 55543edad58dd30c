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
}
