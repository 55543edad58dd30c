import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Testing
import Tollgate
import TollgateAsyncHTTPClient
import TollgateFakeAPI
import TollgateProxy
import TollgateTestSupport

@Suite("Hostile input: huge server answers", .serialized)
struct LargeResponseTests {
    static let mebibyte = 1 << 20

    @Test("an answer over the cache's body cap is delivered but never stored")
    func overTheBodyCap() async throws {
        var behaviour = FakeAPIBehaviour()
        behaviour.bodyPadding = 6 * Self.mebibyte
        let fixture = try await GateFixture(behaviour: behaviour)
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            #expect(fixture.gate.configuration.cache.maxBodySize < 6 * Self.mebibyte)
            let answer = try await fixture.gate.send(fixture.video("big"), endpoint: "videos.list")
            #expect(answer.source == .network)
            #expect(answer.body.count > 6 * Self.mebibyte)
            #expect(try await fixture.store.cacheTotals() == CacheTotals(entries: 0, bodyBytes: 0))
            #expect(try await fixture.store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("a 100 MiB answer is refused by the transport's maximumBodySize without being held whole, and nothing is stored")
    func hundredMebibytes() async throws {
        let size = 100 * Self.mebibyte
        let server = try StreamingServer(bodySize: size)
        defer { server.stop() }
        let limit = 8 * Self.mebibyte
        let transport = AsyncHTTPClientTransport(timeout: .seconds(30), maximumBodySize: limit)
        let fixture = try await GateFixture(transport: transport)
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let request = HTTPRequest(url: URL(string: "http://127.0.0.1:\(server.port)/youtube/v3/videos?id=huge")!)

            let baseline = residentMemory()
            let sampler = MemorySampler()
            do {
                _ = try await fixture.gate.send(request, endpoint: "videos.list")
                Issue.record("a 100 MiB answer was accepted")
            } catch let error as HTTPTransportError {
                guard case .responseTooLarge(let reported) = error else {
                    Issue.record("unexpected error \(error)")
                    return
                }
                #expect(reported == limit)
            }
            let peak = sampler.stop()
            if baseline > 0 {
                #expect(peak - baseline < 64 * Self.mebibyte, "the client grew by \((peak - baseline) / Self.mebibyte) MiB")
            }
            #expect(server.bytesSent < size, "the whole body was downloaded")
            #expect(try await fixture.store.cacheTotals().entries == 0)
            // The attempt reached the server, so its charge stays; the ledger adds up.
            #expect(try await fixture.store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("with streamsLargeBodies, a 100 MiB answer passes through the gate in constant memory, uncached, charged once")
    func hundredMebibytesStreamed() async throws {
        let size = 100 * Self.mebibyte
        let server = try StreamingServer(bodySize: size)
        defer { server.stop() }
        let fixture = try await GateFixture(transport: AsyncHTTPClientTransport(timeout: .seconds(60)))
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let request = HTTPRequest(url: URL(string: "http://127.0.0.1:\(server.port)/youtube/v3/videos?id=huge")!)

            let baseline = residentMemory()
            let sampler = MemorySampler()
            let answer = try await fixture.gate.send(request, endpoint: "videos.list",
                                                     options: GateRequestOptions(streamsLargeBodies: true))
            let stream = try #require(answer.bodyStream, "a body over maxBodySize comes as a stream")
            #expect(answer.body.isEmpty)
            var received = 0
            var onlyX = true
            for try await chunk in stream {
                received += chunk.count
                onlyX = onlyX && chunk.allSatisfy { $0 == UInt8(ascii: "x") }
            }
            let peak = sampler.stop()
            #expect(received == size)
            #expect(onlyX)
            if baseline > 0 {
                #expect(peak - baseline < 48 * Self.mebibyte, "the client grew by \((peak - baseline) / Self.mebibyte) MiB")
            }
            #expect(answer.unitsCharged == 1)
            #expect(try await fixture.store.cacheTotals().entries == 0)
            #expect(try await fixture.store.quotaLedgerDiscrepancies().isEmpty)

            // A small answer still comes whole, and is stored.
            let small = try await fixture.gate.send(fixture.video("small"), endpoint: "videos.list",
                                                    options: GateRequestOptions(streamsLargeBodies: true))
            #expect(small.bodyStream == nil)
            #expect(!small.body.isEmpty)
            try await fixture.gate.flush() // stored just after the answer
            #expect(try await fixture.store.cacheTotals().entries == 1)
        }
    }

    @Test("the proxy streams a 100 MiB answer to its client without holding it")
    func proxyStreams() async throws {
        let size = 100 * Self.mebibyte
        let server = try StreamingServer(bodySize: size)
        defer { server.stop() }
        let fixture = try await GateFixture(transport: AsyncHTTPClientTransport(timeout: .seconds(60)))
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let proxy = try await GateProxy.start(
                gate: fixture.gate, upstream: URL(string: "http://127.0.0.1:\(server.port)")!,
                listen: try LoopbackAddress(parsing: "127.0.0.1:0")
            )
            try await withStopping(proxy, stop: { await $0.stop() }) { proxy in
                let baseline = residentMemory()
                let sampler = MemorySampler()
                let port = proxy.address.port
                let received = try await withCheckedThrowingContinuation { continuation in
                    Thread {
                        continuation.resume(with: Result {
                            try RawHTTPClient.countBody(port: port, "GET /youtube/v3/videos?id=huge HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        })
                    }.start()
                }
                let peak = sampler.stop()
                #expect(received.status == 200)
                #expect(received.bodyBytes == size)
                if baseline > 0 {
                    #expect(peak - baseline < 64 * Self.mebibyte, "the proxy grew by \((peak - baseline) / Self.mebibyte) MiB")
                }
                #expect(try await fixture.store.cacheTotals().entries == 0)
            }
        }
    }
}
