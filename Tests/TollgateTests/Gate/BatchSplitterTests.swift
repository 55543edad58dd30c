import Foundation
import HTTPTypes
import Testing
@testable import Tollgate

/// The pure part of batching: which requests may share a batch, the call for several IDs, and the
/// split of its answer. No network, no store.
@Suite("Batching: the splitter")
struct BatchSplitterTests {
    let splitter = BatchSplitter(policy: .youTubeList)

    @Test("a request for one ID has a share; its other parameters, sorted by name, say which batch it may join")
    func share() throws {
        let share = try #require(splitter.share(of: "/youtube/v3/videos?part=snippet&id=v1&key=K"))
        #expect(share.id == "v1")
        #expect(share.rawValue == "v1")
        #expect(share.rest == "/youtube/v3/videos?key=K&part=snippet")
        let other = try #require(splitter.share(of: "/youtube/v3/videos?id=v2&key=K&part=snippet"))
        #expect(other.rest == share.rest)
        #expect(splitter.share(of: "/youtube/v3/videos?id=v2&part=statistics&key=K")?.rest != share.rest)
        #expect(splitter.share(of: "/youtube/v3/videos?id=v2&part=snippet&key=K2")?.rest != share.rest)
    }

    @Test("no ID, several IDs, an empty ID or the parameter twice: not batched",
          arguments: ["/youtube/v3/videos?part=snippet", "/youtube/v3/videos?id=a,b&part=snippet",
                      "/youtube/v3/videos?id=a%2Cb", "/youtube/v3/videos?id=&part=snippet",
                      "/youtube/v3/videos?id=a&id=b", "/youtube/v3/videos", "/youtube/v3/videos?id"])
    func notBatched(target: String) {
        #expect(splitter.share(of: target) == nil)
    }

    @Test("escapes are decoded in names and IDs; an encoded or multi-byte separator inside an ID is found as bytes")
    func escapesAndSeparators() throws {
        let escaped = try #require(splitter.share(of: "/youtube/v3/videos?%69d=a%20b&part=snippet"))
        #expect(escaped.id == "a b")
        #expect(escaped.rawValue == "a%20b")
        #expect(splitter.share(of: "/youtube/v3/videos?id=a%2cb") == nil, "a lower-case escape of the separator")
        #expect(splitter.share(of: "/youtube/v3/videos?id=%zz")?.id == "%zz", "a malformed escape is kept as it came")
        #expect(BatchSplitter.bytes(of: "a→b", contain: "→"))
        #expect(!BatchSplitter.bytes(of: "a-b", contain: "→"))
        #expect(!BatchSplitter.bytes(of: "→", contain: "→→"))
        #expect(BatchSplitter.bytes(of: "ab", contain: ""))
    }

    @Test("the call for several IDs changes only the ID parameter's value, IDs in the order given")
    func combined() {
        #expect(splitter.combinedTarget("/youtube/v3/videos?part=snippet&id=v1&key=K", ids: ["v3", "v1", "a%20b"])
                == "/youtube/v3/videos?part=snippet&id=v3,v1,a%20b&key=K")
    }

    @Test("the answer is split by item key: each ID gets the envelope with its items only, an unknown ID none")
    func split() throws {
        let body = Data(#"""
        {"kind": "youtube#videoListResponse", "etag": "E", "items": [
          {"kind": "youtube#video", "id": "v2", "snippet": {"title": "two"}},
          {"kind": "youtube#video", "id": "v1", "snippet": {"title": "one"}},
          {"kind": "youtube#video", "snippet": {"title": "no id"}}
        ], "pageInfo": {"totalResults": 2, "resultsPerPage": 2}}
        """#.utf8)
        let bodies = try splitter.split(body, ids: ["v1", "v2", "unknown"])
        func object(_ id: String) throws -> [String: Any] {
            let body = try #require(bodies[id])
            return try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        }
        let one = try object("v1")
        #expect(one["kind"] as? String == "youtube#videoListResponse")
        let items = try #require(one["items"] as? [[String: Any]])
        #expect(items.count == 1)
        #expect(items.first?["id"] as? String == "v1")
        #expect((items.first?["snippet"] as? [String: Any])?["title"] as? String == "one")
        #expect((try object("v2")["items"] as? [[String: Any]])?.map { $0["id"] as? String } == ["v2"])
        #expect((try object("unknown")["items"] as? [Any])?.isEmpty == true)
        // The page counts are each ID's own, as its call alone would have said.
        #expect(one["pageInfo"] as? [String: Int] == ["totalResults": 1, "resultsPerPage": 1])
        #expect(try object("unknown")["pageInfo"] as? [String: Int] == ["totalResults": 0, "resultsPerPage": 0])
    }

    @Test("an answer that is not a JSON object with a list of items cannot be split")
    func unsplittable() {
        #expect(throws: BatchSplitError.notAJSONObject) { try splitter.split(Data("not json".utf8), ids: ["v1"]) }
        #expect(throws: BatchSplitError.noItemList(field: "items")) {
            try splitter.split(Data(#"{"data": []}"#.utf8), ids: ["v1"])
        }
    }

    @Test("a member's head keeps the batch's but for its validators and length")
    func memberHead() {
        var response = HTTPResponse(status: .ok)
        response.headerFields[.eTag] = "\"batch\""
        response.headerFields[.lastModified] = "Tue, 01 Dec 2026 00:00:00 GMT"
        response.headerFields[.contentLength] = "999"
        response.headerFields[.cacheControl] = "private, max-age=300"
        let member = Gate.memberResponse(response, body: Data("12345".utf8))
        #expect(member.headerFields[.eTag] == nil)
        #expect(member.headerFields[.lastModified] == nil)
        #expect(member.headerFields[.contentLength] == "5")
        #expect(member.headerFields[.cacheControl] == "private, max-age=300")
    }
}
