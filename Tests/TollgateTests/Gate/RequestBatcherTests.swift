import Foundation
import HTTPTypes
import Testing
@testable import Tollgate

/// The batcher's lanes as values: who goes alone, who collects, when a batch closes. No network,
/// no store, no clock but the times passed in.
@Suite("Batching: the batcher's lanes")
struct RequestBatcherTests {
    /// Never used: the batcher only carries a member's transport to the gate.
    struct UnusedTransport: HTTPTransport {
        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            Issue.record("the batcher sent a request")
            return (HTTPResponse(status: .ok), Data())
        }
    }

    let splitter = BatchSplitter(policy: .youTubeList)
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let wait = Duration.milliseconds(10)

    func member(_ id: String, part: String = "snippet") throws -> (RequestBatcher.Key, RequestBatcher.Member) {
        let request = HTTPRequest(method: .get, scheme: "https", authority: "www.googleapis.com",
                                  path: "/youtube/v3/videos?id=\(id)&part=\(part)")
        let share = try #require(splitter.share(of: request.path ?? ""))
        return (RequestBatcher.Key(endpoint: "videos.list", request: request, share: share, options: GateRequestOptions()),
                RequestBatcher.Member(share: share, request: request, transport: UnusedTransport()))
    }

    func at(_ milliseconds: Double) -> Date { start.addingTimeInterval(milliseconds / 1000) }

    @Test("the first request goes alone; the next collect behind it; once its wait has passed and the call ahead lands, the batch goes; then the lane is idle")
    func aloneThenBatch() throws {
        let batcher = RequestBatcher()
        let (key, first) = try member("v0")
        guard case .goesAlone = batcher.join(key, first, maximum: 50, now: at(0)) else {
            Issue.record("a lone request waits"); return
        }
        let (_, second) = try member("v1")
        guard case .waits(let batch, _, opensBatch: true) = batcher.join(key, second, maximum: 50, now: at(1)) else {
            Issue.record("the second request does not open a batch"); return
        }
        let (_, third) = try member("v2")
        guard case .waits(let same, _, opensBatch: false) = batcher.join(key, third, maximum: 50, now: at(2)), same === batch else {
            Issue.record("the third request does not join the open batch"); return
        }
        #expect(batcher.collectingMembers == 2)
        // 9 ms after the first join: 1 ms more.
        guard case .waitsLonger(let more) = batcher.timerFired(key, batch, wait: wait, now: at(10)) else {
            Issue.record("the batch closed before its wait"); return
        }
        #expect(abs((more - .milliseconds(1)) / .microseconds(1)) < 1)
        // Its wait has passed, but the first call is on the wire: the timer stops; its landing sends the batch.
        guard case .waitsForCallsAhead = batcher.timerFired(key, batch, wait: wait, now: at(12)) else {
            Issue.record("the batch went while the call ahead was on the wire"); return
        }
        guard case .sends(let sent, let entries) = batcher.landed(key), sent === batch else {
            Issue.record("the landing did not send the batch"); return
        }
        #expect(entries.map(\.member.share.id) == ["v1", "v2"])
        #expect(batcher.collectingMembers == 0)
        #expect(batcher.callsOnTheWire == 1)
        guard case .nothing = batcher.landed(key) else { Issue.record("a landing did something"); return }
        #expect(batcher.callsOnTheWire == 0)
        let (_, later) = try member("v3")
        guard case .goesAlone = batcher.join(key, later, maximum: 50, now: at(50)) else {
            Issue.record("a request on an idle lane waits"); return
        }
    }

    @Test("a batch's wait counts from its first member: requests joining until the last moment do not hold it, and it goes at first join + wait")
    func waitCountsFromFirstJoin() throws {
        let batcher = RequestBatcher()
        let (key, first) = try member("v0")
        _ = batcher.join(key, first, maximum: 50, now: at(0))
        guard case .waits(let batch, _, opensBatch: true) = batcher.join(key, try member("v1").1, maximum: 50, now: at(1)) else {
            Issue.record("no batch"); return
        }
        // The call ahead lands before the wait has passed: nothing to send yet.
        guard case .nothing = batcher.landed(key) else { Issue.record("the landing sent a batch before its wait"); return }
        // A stream of joiners, the last a moment before the wait ends.
        for (index, joinedAt) in [4.0, 7, 10.5].enumerated() {
            guard case .waits(let same, _, opensBatch: false) = batcher.join(key, try member("v\(index + 2)").1, maximum: 50,
                                                                            now: at(joinedAt)), same === batch else {
                Issue.record("a joiner did not join the open batch"); return
            }
        }
        // 4 ms after the first join: 6 ms more, whatever joined since.
        guard case .waitsLonger(let more) = batcher.timerFired(key, batch, wait: wait, now: at(5)) else {
            Issue.record("the batch closed before its wait"); return
        }
        #expect(abs((more - .milliseconds(6)) / .microseconds(1)) < 1)
        // First join + wait: it goes, though a request joined 0.5 ms ago.
        guard case .closes(let entries) = batcher.timerFired(key, batch, wait: wait, now: at(11)) else {
            Issue.record("a late joiner held the batch past its first member's wait"); return
        }
        #expect(entries.map(\.member.share.id) == ["v1", "v2", "v3", "v4"])
        #expect(batcher.callsOnTheWire == 1)
    }

    @Test("a batch whose wait has passed while the call ahead is on the wire goes when that call lands, with whatever joined meanwhile")
    func parkedBatchGoesOnLanding() throws {
        let batcher = RequestBatcher()
        let (key, first) = try member("v0")
        _ = batcher.join(key, first, maximum: 50, now: at(0))
        guard case .waits(let batch, _, _) = batcher.join(key, try member("v1").1, maximum: 50, now: at(1)) else {
            Issue.record("no batch"); return
        }
        guard case .waitsForCallsAhead = batcher.timerFired(key, batch, wait: wait, now: at(11)) else {
            Issue.record("the batch did not park"); return
        }
        _ = batcher.join(key, try member("v2").1, maximum: 50, now: at(15))
        guard case .sends(let sent, let entries) = batcher.landed(key), sent === batch else {
            Issue.record("the landing did not send the parked batch"); return
        }
        #expect(entries.map(\.member.share.id) == ["v1", "v2"])
    }

    @Test("a batch that reaches its maximum of distinct IDs closes at once, even behind a call on the wire; the next request opens the next batch")
    func fullAtOnce() throws {
        let batcher = RequestBatcher()
        let (key, first) = try member("v0")
        _ = batcher.join(key, first, maximum: 2, now: at(0))
        _ = batcher.join(key, try member("v1").1, maximum: 2, now: at(1))
        // The same ID again adds no ID.
        guard case .waits = batcher.join(key, try member("v1").1, maximum: 2, now: at(1)) else {
            Issue.record("a repeated ID filled the batch"); return
        }
        guard case .fills(let full, _, let entries) = batcher.join(key, try member("v2").1, maximum: 2, now: at(2)) else {
            Issue.record("the full batch did not close"); return
        }
        #expect(entries.map(\.member.share.id) == ["v1", "v1", "v2"])
        #expect(batcher.callsOnTheWire == 2)
        guard case .waits(let next, _, opensBatch: true) = batcher.join(key, try member("v3").1, maximum: 2, now: at(3)) else {
            Issue.record("no next batch"); return
        }
        #expect(next !== full)
    }

    @Test("requests that differ in part are in different lanes: each goes alone first")
    func partsApart() throws {
        let batcher = RequestBatcher()
        let (snippet, first) = try member("v0")
        let (statistics, other) = try member("v1", part: "statistics")
        #expect(snippet != statistics)
        guard case .goesAlone = batcher.join(snippet, first, maximum: 50, now: at(0)),
              case .goesAlone = batcher.join(statistics, other, maximum: 50, now: at(0)) else {
            Issue.record("a request waited behind another part's call"); return
        }
    }

    @Test("a batch key: the same for header names in another case, another for another value, order, ID-less rest or options")
    func keysByFieldsAndOptions() throws {
        func key(_ fields: [(String, String)], id: String = "v0", options: GateRequestOptions = GateRequestOptions())
            throws -> RequestBatcher.Key {
            var request = HTTPRequest(method: .get, scheme: "https", authority: "www.googleapis.com",
                                      path: "/youtube/v3/videos?id=\(id)&part=snippet")
            for (name, value) in fields { request.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
            let share = try #require(splitter.share(of: request.path ?? ""))
            return RequestBatcher.Key(endpoint: "videos.list", request: request, share: share, options: options)
        }
        let base = try key([("X-Goog-Api-Key", "k1"), ("Accept", "application/json")])
        #expect(try key([("x-goog-api-key", "k1"), ("accept", "application/json")]) == base)
        #expect(try key([("x-goog-api-key", "k1"), ("accept", "application/json")]).hashValue == base.hashValue)
        var neverIndexed = HTTPField(name: HTTPField.Name("X-Goog-Api-Key")!, value: "k1")
        neverIndexed.indexingStrategy = .disallow
        var request = HTTPRequest(method: .get, scheme: "https", authority: "www.googleapis.com",
                                  path: "/youtube/v3/videos?id=v0&part=snippet")
        request.headerFields = HTTPFields([neverIndexed, HTTPField(name: .accept, value: "application/json")])
        let indexedOtherwise = RequestBatcher.Key(endpoint: "videos.list", request: request,
                                                  share: try #require(splitter.share(of: request.path ?? "")),
                                                  options: GateRequestOptions())
        #expect(indexedOtherwise == base, "an HPACK indexing choice is not part of the request")
        #expect(indexedOtherwise.hashValue == base.hashValue)
        #expect(try key([("X-Goog-Api-Key", "k1"), ("Accept", "application/json")], id: "v9") == base)
        #expect(try key([("X-Goog-Api-Key", "k1"), ("Accept", "application/json")], id: "v9").hashValue == base.hashValue)
        #expect(try key([("X-Goog-Api-Key", "k2"), ("Accept", "application/json")]) != base)
        #expect(try key([("Accept", "application/json"), ("X-Goog-Api-Key", "k1")]) != base)
        #expect(try key([("X-Goog-Api-Key", "k1")]) != base)
        var options = GateRequestOptions()
        options.freshFor = .seconds(60)
        #expect(try key([("X-Goog-Api-Key", "k1"), ("Accept", "application/json")], options: options) != base)
        // Two keys the batcher tells apart are two lanes: each goes alone.
        let batcher = RequestBatcher()
        let (_, member) = try member("v0")
        guard case .goesAlone = batcher.join(base, member, maximum: 50, now: at(0)),
              case .goesAlone = batcher.join(try key([("X-Goog-Api-Key", "k2"), ("Accept", "application/json")]), member,
                                             maximum: 50, now: at(0)),
              case .waits = batcher.join(try key([("x-goog-api-key", "k1"), ("accept", "application/json")], id: "v1"), member,
                                         maximum: 50, now: at(0)) else {
            Issue.record("keys of other credentials shared a lane, or the same key did not"); return
        }
    }

    @Test("the last member to leave a collecting batch removes it: it is never sent")
    func leftByAll() throws {
        let batcher = RequestBatcher()
        let (key, first) = try member("v0")
        _ = batcher.join(key, first, maximum: 50, now: at(0))
        guard case .waits(let batch, let ticket, _) = batcher.join(key, try member("v1").1, maximum: 50, now: at(1)) else {
            Issue.record("no batch"); return
        }
        guard case .nothing = batcher.leave(key, batch, ticket: ticket) else {
            Issue.record("leaving did something"); return
        }
        #expect(batcher.collectingMembers == 0)
        guard case .closedAlready = batcher.timerFired(key, batch, wait: wait, now: at(20)) else {
            Issue.record("the emptied batch closed"); return
        }
    }
}
