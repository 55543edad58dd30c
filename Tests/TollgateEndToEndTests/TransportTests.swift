import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateAsyncHTTPClient
import TollgateFakeAPI
import TollgateTestSupport

/// Both transports, so every end-to-end test can run with each.
enum TransportKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case urlSession
    case asyncHTTPClient

    func make() -> any HTTPTransport {
        switch self {
        case .urlSession: URLSessionTransport(timeout: .seconds(10))
        case .asyncHTTPClient: AsyncHTTPClientTransport(timeout: .seconds(10))
        }
    }

    var testDescription: String { rawValue }
}

extension HTTPRequest {
    /// A GET for an absolute URL, with extra header fields.
    static func get(_ url: URL, _ headers: [HTTPField.Name: String] = [:]) -> HTTPRequest {
        var request = HTTPRequest(url: url)
        for (name, value) in headers { request.headerFields[name] = value }
        return request
    }
}

@Suite("Transports against the fake API over loopback")
struct TransportTests {
    @Test("a GET returns the resource with an ETag, and If-None-Match gets a 304 at YouTube's 1 unit", arguments: TransportKind.allCases)
    func conditionalGet(kind: TransportKind) async throws {
        let api = try await FakeYouTubeAPI.start()
        try await withStopping(api, stop: { await $0.stop() }) { api in
            let transport = kind.make()
            let url = api.url("videos", ["id": "v1", "part": "snippet"])

            let (first, body) = try await transport.send(.get(url), body: nil)
            #expect(first.status.code == 200)
            let etag = try #require(first.headerFields[.eTag])
            #expect(String(decoding: body, as: UTF8.self).contains("revision"))
            #expect(api.unitsUsed == 1)

            let (second, secondBody) = try await transport.send(.get(url, [.ifNoneMatch: etag]), body: nil)
            #expect(second.status.code == 304)
            #expect(secondBody.isEmpty)
            #expect(api.unitsUsed == 2, "like YouTube, the fake charges a 304 its 1 unit")
            #expect(api.receivedRequests.map(\.ifNoneMatch) == [nil, etag])

            api.modify(path: "/youtube/v3/videos", query: "part=snippet&id=v1")
            let (third, _) = try await transport.send(.get(url, [.ifNoneMatch: etag]), body: nil)
            #expect(third.status.code == 200)
            #expect(third.headerFields[.eTag] != etag)
        }
    }

    @Test("faults: a 429 storm with Retry-After, an outage, and a spent quota in Google's format", arguments: TransportKind.allCases)
    func faults(kind: TransportKind) async throws {
        let api = try await FakeYouTubeAPI.start()
        try await withStopping(api, stop: { await $0.stop() }) { api in
            let transport = kind.make()
            let url = api.url("search", ["q": "swift"])

            api.updateBehaviour { $0.rateLimitStorm = .init(count: 2, retryAfter: "7") }
            for _ in 0..<2 {
                let (response, _) = try await transport.send(.get(url), body: nil)
                #expect(response.status.code == 429)
                #expect(response.headerFields[.retryAfter] == "7")
            }
            api.updateBehaviour { $0.outage = .init(status: 503, count: 1) }
            #expect(try await transport.send(.get(url), body: nil).0.status.code == 503)

            api.updateBehaviour { $0.searchCallsPerDay = 1 }
            #expect(try await transport.send(.get(url), body: nil).0.status.code == 200)
            let (spent, body) = try await transport.send(.get(url), body: nil)
            #expect(spent.status.code == 403)
            let text = String(decoding: body, as: UTF8.self)
            #expect(text.contains("\"reason\":\"quotaExceeded\""))
            #expect(text.contains("exceeded your quota for search.list"))
            #expect(api.unitsUsed(bucket: "youtube.search") == 1)
            #expect(api.unitsUsed == 0, "searches have a bucket of their own")
            #expect(try await transport.send(.get(api.url("videos", ["id": "v1"])), body: nil).0.status.code == 200,
                    "videos.list keeps working when searches are spent")
            #expect(api.receivedRequests.map(\.status) == [429, 429, 503, 200, 403, 200])
        }
    }

    @Test("the fake's single-pool model charges search.list 100 units of the one daily quota", arguments: TransportKind.allCases)
    func singlePool(kind: TransportKind) async throws {
        var behaviour = FakeAPIBehaviour()
        behaviour.quotaModel = .singlePool
        behaviour.dailyQuota = 150
        let api = try await FakeYouTubeAPI.start(behaviour: behaviour)
        try await withStopping(api, stop: { await $0.stop() }) { api in
            let transport = kind.make()
            let url = api.url("search", ["q": "swift"])
            #expect(try await transport.send(.get(url), body: nil).0.status.code == 200)
            let (spent, body) = try await transport.send(.get(url), body: nil)
            #expect(spent.status.code == 403)
            #expect(String(decoding: body, as: UTF8.self).contains("\"reason\":\"quotaExceeded\""))
            #expect(api.unitsUsed == 100)
        }
    }

    @Test("a closed port is a connection failure, not an HTTP answer", arguments: TransportKind.allCases)
    func connectionRefused(kind: TransportKind) async throws {
        let api = try await FakeYouTubeAPI.start()
        let url = api.url("videos", ["id": "v1"])
        await api.stop()
        await #expect(throws: HTTPTransportError.self) {
            _ = try await kind.make().send(.get(url), body: nil)
        }
    }
}

@Suite("What each transport adds to a request and does to an answer")
struct TransportFidelityTests {
    static let gzipBody = ProxyFidelityTests.gzipBody

    @Test("AsyncHTTPClient sends the fields as given and returns the bytes as sent: no Accept-Encoding, no decoding, no redirect")
    func asyncHTTPClientIsFaithful() async throws {
        let server = try ScriptedHTTPServer { request in
            request.target == "/moved"
                ? .init(status: 301, headers: [("Location", "/elsewhere")], body: "moved body")
                : .init(headers: [("Content-Encoding", "gzip")], body: Self.gzipBody)
        }
        defer { server.stop() }
        let transport = AsyncHTTPClientTransport(timeout: .seconds(10))
        let (response, body) = try await transport.send(.get(URL(string: "\(server.baseURL)/data")!), body: nil)
        #expect(body == Self.gzipBody, "not decoded")
        #expect(response.headerFields[.contentEncoding] == "gzip")
        let sent = try #require(server.requests.first)
        #expect(sent.header("Accept-Encoding") == nil)
        #expect(sent.header("Accept-Language") == nil)

        let (moved, movedBody) = try await transport.send(.get(URL(string: "\(server.baseURL)/moved")!), body: nil)
        #expect(moved.status.code == 301)
        #expect(movedBody == Data("moved body".utf8))
        #expect(server.requests.count == 2, "the redirect is not followed")
    }

    @Test("URLSession adds Accept-Encoding and Accept-Language and decodes gzip, but follows no redirect")
    func urlSessionRewrites() async throws {
        let server = try ScriptedHTTPServer { request in
            request.target == "/moved"
                ? .init(status: 301, headers: [("Location", "/elsewhere")])
                : .init(headers: [("Content-Encoding", "gzip")], body: Self.gzipBody)
        }
        defer { server.stop() }
        let transport = URLSessionTransport(timeout: .seconds(10))
        let (_, body) = try await transport.send(.get(URL(string: "\(server.baseURL)/data")!), body: nil)
        #expect(body != Self.gzipBody, "FoundationNetworking decodes gzip")
        #expect(String(decoding: body, as: UTF8.self).hasPrefix("{\"items\""))
        let sent = try #require(server.requests.first)
        #expect(sent.header("Accept-Encoding")?.contains("gzip") == true)

        let (moved, _) = try await transport.send(.get(URL(string: "\(server.baseURL)/moved")!), body: nil)
        #expect(moved.status.code == 301)
        #expect(server.requests.count == 2, "the redirect is not followed")
    }
}
