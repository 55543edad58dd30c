import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import Tollgate
import TollgateTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `URLSession(configuration: .tollgated(by: gate))` over FoundationNetworking, against a loopback
/// origin: every request goes through the gate, as the proxy's do.
@Suite("URLSession drop-in: a tollgated configuration sends every request through the gate", .serialized)
struct URLSessionDropInTests {
    /// A gate over a fresh file in front of a scripted origin that serves `"v1"` and answers a
    /// matching `If-None-Match` with a 304, and records what it received.
    final class Harness {
        let directory: TemporaryDirectory
        let origin: ScriptedHTTPServer
        let store: SQLiteStore
        let gate: Gate
        let session: URLSession

        init(naming: EndpointNaming = .methodAndPath, configure: (inout GateConfiguration) -> Void = { _ in }) throws {
            directory = try TemporaryDirectory()
            origin = try ScriptedHTTPServer { request in
                if request.method == "POST" {
                    return .init(status: 201, headers: [(name: "Content-Type", value: "application/json")], body: request.body)
                }
                if request.header("If-None-Match") == "\"v1\"" {
                    return .init(status: 304, headers: [(name: "ETag", value: "\"v1\""), (name: "Cache-Control", value: "no-cache")])
                }
                return .init(status: 200, headers: [(name: "ETag", value: "\"v1\""), (name: "Cache-Control", value: "no-cache"),
                                                    (name: "Content-Type", value: "application/json")],
                             body: "{\"items\": [1, 2, 3]}")
            }
            var configuration = GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000)
            configure(&configuration)
            store = try SQLiteStore(path: directory.path("ledger.sqlite"))
            gate = try Gate(store: store, transport: URLSessionTransport(timeout: .seconds(10)),
                            configuration: configuration, clock: SystemClock())
            session = URLSession(configuration: .tollgated(by: gate, naming: naming, hosts: ["127.0.0.1"]))
        }

        func url(_ path: String) -> URL { URL(string: origin.baseURL + path)! }

        deinit {
            // Not invalidateAndCancel(): FoundationNetworking resumes an async data(for:) a second
            // time, and traps, when a task that already failed is cancelled.
            session.finishTasksAndInvalidate()
            origin.stop()
        }
    }

    private func header(_ response: URLResponse, _ name: String) -> String? {
        (response as? HTTPURLResponse)?.value(forHTTPHeaderField: name)
    }

    @Test("a network answer, then a 304 served from the store at YouTube's 1 unit, with async data(for:)")
    func networkThenRevalidated() async throws {
        let harness = try Harness()
        let (first, firstResponse) = try await harness.session.data(from: harness.url("/v1/items"))
        #expect((firstResponse as? HTTPURLResponse)?.statusCode == 200)
        #expect(header(firstResponse, "X-Tollgate-Source") == "network")
        #expect(header(firstResponse, "X-Tollgate-Units") == "1")
        #expect(header(firstResponse, "X-Tollgate-Endpoint") == "GET /v1/items")

        let (second, secondResponse) = try await harness.session.data(from: harness.url("/v1/items"))
        #expect((secondResponse as? HTTPURLResponse)?.statusCode == 200)
        #expect(header(secondResponse, "X-Tollgate-Source") == "revalidated")
        #expect(header(secondResponse, "X-Tollgate-Units") == "1")
        #expect(second == first)
        #expect(String(decoding: second, as: UTF8.self) == "{\"items\": [1, 2, 3]}")
        #expect(harness.origin.requests.map { $0.header("If-None-Match") } == [nil, "\"v1\""])
        try await harness.gate.flush()
        let spent = try await harness.gate.quota.usage().filter { $0.bucket == QuotaConfiguration.youTubeBucket }
            .map(\.units).reduce(0, +)
        #expect(spent == 2, "a 304 costs 1 unit on YouTube")
    }

    @Test("URLRequest.cachePolicy: returnCacheDataElseLoad serves what is stored without asking, reloadIgnoringLocalCacheData asks, returnCacheDataDontLoad never sends")
    func cachePolicies() async throws {
        let harness = try Harness()
        var dontLoad = URLRequest(url: harness.url("/v1/items"))
        dontLoad.cachePolicy = .returnCacheDataDontLoad
        await #expect(throws: URLError.self, "nothing stored, and loading is forbidden") {
            _ = try await harness.session.data(for: dontLoad)
        }
        #expect(harness.origin.requests.isEmpty, "never sent")

        _ = try await harness.session.data(from: harness.url("/v1/items"))
        var elseLoad = URLRequest(url: harness.url("/v1/items"))
        elseLoad.cachePolicy = .returnCacheDataElseLoad
        let (stored, storedResponse) = try await harness.session.data(for: elseLoad)
        #expect(header(storedResponse, "X-Tollgate-Source") == "fresh", "the origin said no-cache; the app said any stored answer")
        #expect(header(storedResponse, "X-Tollgate-Units") == "0")
        #expect(header(storedResponse, "Age") != nil)
        #expect(String(decoding: stored, as: UTF8.self) == "{\"items\": [1, 2, 3]}")
        let (_, cachedResponse) = try await harness.session.data(for: dontLoad)
        #expect(header(cachedResponse, "X-Tollgate-Source") == "fresh")
        #expect(harness.origin.requests.count == 1)

        var reload = URLRequest(url: harness.url("/v1/items"))
        reload.cachePolicy = .reloadIgnoringLocalCacheData
        let (_, reloaded) = try await harness.session.data(for: reload)
        #expect(header(reloaded, "X-Tollgate-Source") == "revalidated", "asked the server")
        #expect(harness.origin.requests.count == 2)
        #expect(harness.origin.requests.last?.header("If-None-Match") == "\"v1\"")
    }

    @Test("with a completion handler, as older code calls it")
    func completionHandler() async throws {
        let harness = try Harness()
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<(Data?, URLResponse?, String?), Never>) in
            harness.session.dataTask(with: harness.url("/v1/items")) { data, response, error in
                continuation.resume(returning: (data, response, error.map { "\($0)" }))
            }.resume()
        }
        #expect(result.2 == nil)
        #expect(result.0.map { String(decoding: $0, as: UTF8.self) } == "{\"items\": [1, 2, 3]}")
        #expect(result.1.flatMap { header($0, "X-Tollgate-Source") } == "network")
    }

    @Test("an open circuit refuses as a URLError that carries the gate's error, and nothing is sent")
    func openCircuitRefuses() async throws {
        let harness = try Harness()
        try await harness.gate.circuit.forceOpen(endpoint: "GET /v1/other", for: .seconds(600))
        let error = await #expect(throws: URLError.self) {
            _ = try await harness.session.data(from: harness.url("/v1/other"))
        }
        #expect(error?.code == .resourceUnavailable)
        let gateError = error?.tollgateError as? TollgateError
        guard case .circuitOpen = gateError else {
            Issue.record("expected the gate's circuitOpen, got \(String(describing: error?.tollgateError))")
            return
        }
        #expect(harness.origin.requests.isEmpty)
    }

    @Test("a POST body reaches the origin intact, whether given as data or as a stream")
    func postBody() async throws {
        let harness = try Harness()
        let payload = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        var request = URLRequest(url: harness.url("/v1/upload"))
        request.httpMethod = "POST"
        request.httpBody = payload
        let (echo, response) = try await harness.session.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 201)
        #expect(echo == payload)
        #expect(harness.origin.requests.last?.body == payload)

        // An upload task whose body the loading system keeps from its protocols (FoundationNetworking
        // does) fails clearly instead of sending the request empty. Through the completion handler:
        // FoundationNetworking's async upload(for:from:) resumes its continuation twice when a
        // protocol fails the task, and traps; its handler may be called twice too, so the first
        // call alone counts.
        let sentBefore = harness.origin.requests.count
        let uploaded = await withCheckedContinuation { (continuation: CheckedContinuation<(Data?, URLError?), Never>) in
            let resumed = Mutex(false)
            harness.session.uploadTask(with: request, from: payload) { data, _, error in
                guard resumed.withLock({ done in defer { done = true }; return !done }) else { return }
                continuation.resume(returning: (data, error as? URLError))
            }.resume()
        }
        if let error = uploaded.1 {
            #expect(error.code == .requestBodyStreamExhausted)
            #expect(harness.origin.requests.count == sentBefore, "nothing was sent without its body")
        } else {
            #expect(uploaded.0 == payload, "when the body does reach the protocol, it arrives whole")
        }

        var streamed = URLRequest(url: harness.url("/v1/upload"))
        streamed.httpMethod = "POST"
        streamed.httpBodyStream = InputStream(data: payload)
        #expect(try TollgateURLProtocol.body(of: streamed) == payload, "a body stream is read whole")
    }

    @Test("while the app (and its store) is suspended nothing is admitted, even failing open; resumed, requests go again")
    func suspendedStoreAdmitsNothing() async throws {
        let harness = try Harness { $0.ledgerFailurePolicy = .failOpen }
        harness.store.suspend()
        let error = await #expect(throws: URLError.self) {
            _ = try await harness.session.data(from: harness.url("/v1/items"))
        }
        #expect(error?.code == .resourceUnavailable)
        guard case .suspended = error?.tollgateError as? StoreError else {
            Issue.record("expected the store's suspended, got \(String(describing: error?.tollgateError))")
            return
        }
        #expect(harness.origin.requests.isEmpty, "nothing was sent while suspended")
        harness.store.resume()
        let (_, response) = try await harness.session.data(from: harness.url("/v1/items"))
        #expect(header(response, "X-Tollgate-Source") == "network")
    }

    @Test("a host the gate does not answer for goes to the network without it")
    func otherHostsBypass() async throws {
        let harness = try Harness()
        let url = URL(string: "http://localhost:\(harness.origin.port)/v1/items")!
        let (_, response) = try await harness.session.data(from: url)
        #expect(header(response, "X-Tollgate-Source") == nil)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
    }
}
