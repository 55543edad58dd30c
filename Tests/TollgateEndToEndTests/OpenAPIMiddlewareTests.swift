import Foundation
import HTTPTypes
@_spi(Generated) import OpenAPIRuntime
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateOpenAPI
import TollgateTestSupport

/// A client written the way swift-openapi-generator writes them: operations that serialise an
/// input into a request relative to the server URL, sent through `UniversalClient` and its middlewares.
private struct GeneratedStyleClient: Sendable {
    let client: UniversalClient

    init(serverURL: URL, transport: any ClientTransport, middlewares: [any ClientMiddleware]) {
        client = UniversalClient(serverURL: serverURL, transport: transport, middlewares: middlewares)
    }

    /// `GET /youtube/v3/videos`, operation `youtube.videos.list` in Google's discovery document.
    func listVideos(id: String) async throws -> (status: Int, body: String) {
        try await client.send(
            input: id,
            forOperation: "youtube.videos.list",
            serializer: { id in
                (HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/youtube/v3/videos?id=\(id)&part=snippet"), nil)
            },
            deserializer: { response, body in
                let text = if let body { try await String(collecting: body, upTo: 1 << 20) } else { "" }
                return (response.status.code, text)
            }
        )
    }
}

/// The generated client's own transport: plain HTTP over URLSession, knowing nothing of the gate.
private struct PlainClientTransport: ClientTransport {
    let transport = URLSessionTransport(timeout: .seconds(10))

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        var absolute = request
        absolute.scheme = baseURL.scheme
        absolute.authority = "\(baseURL.host ?? ""):\(baseURL.port ?? 80)"
        absolute.path = baseURL.path + (request.path ?? "")
        let data: Data? = if let body { Data(try await [UInt8](collecting: body, upTo: 1 << 20)) } else { nil }
        let (response, responseBody) = try await transport.send(absolute, body: data)
        return (response, HTTPBody(responseBody))
    }
}

@Suite("The OpenAPI middleware")
struct OpenAPIMiddlewareTests {
    @Test("a generated-style client behind GateMiddleware gets the cache, the quota ledger and the circuit")
    func generatedClientGoesThroughTheGate() async throws {
        // YouTube's own header says must-revalidate, which forbids serving stale (RFC 9111 §4.2.4);
        // max-age=0 without it keeps every answer revalidated and lets a stored one stand in.
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 0
        let api = try await FakeYouTubeAPI.start(behaviour: behaviour)
        try await withStopping(api, stop: { await $0.stop() }) { api in
            let directory = try TemporaryDirectory()
            let store = try SQLiteStore(path: directory.path("openapi.sqlite"))
            let clock = SimulatedClock(base: ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000)))
            let gate = try Gate(store: store, transport: URLSessionTransport(), clock: clock)
            let client = GeneratedStyleClient(
                serverURL: api.baseURL, transport: PlainClientTransport(),
                middlewares: [GateMiddleware(gate: gate, endpointNames: ["youtube.videos.list": "videos.list"])]
            )

            let first = try await client.listVideos(id: "v1")
            let second = try await client.listVideos(id: "v1")
            #expect(first.status == 200)
            #expect(second.status == 200)
            #expect(second.body == first.body)
            #expect(api.receivedRequests.map(\.status) == [200, 304])
            #expect(api.receivedRequests.last?.ifNoneMatch != nil)
            try await gate.flush() // the 304's settlement is written just after its answer
            #expect(try await gate.quota.usage().map(\.units) == [2], "a 304 costs 1 unit on YouTube")

            try await gate.circuit.forceOpen(endpoint: "videos.list", for: .seconds(60))
            let cached = try await client.listVideos(id: "v1")
            #expect(cached.body == first.body)
            do {
                _ = try await client.listVideos(id: "v2")
                Issue.record("an open circuit with nothing stored must refuse")
            } catch let error as ClientError {
                #expect(error.underlyingError as? TollgateError == .circuitOpen(retryAfter: 60))
            }
            #expect(api.receivedRequests.count == 2)
        }
    }
}
