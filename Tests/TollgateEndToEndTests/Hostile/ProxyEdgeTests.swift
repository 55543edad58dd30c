import Foundation
import Synchronization
import Testing
import Tollgate
import TollgateProxy
import TollgateTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ScriptedGate {
    /// A scripted gate whose retry waits last until the test moves `clock`.
    init(_ kind: TransportKind, clock: any TollgateClock) throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("gate.sqlite"))
        simulatedClock = nil
        gate = try Gate(store: store, transport: kind.make(),
                        configuration: GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000), clock: clock)
    }
}

extension ProxyUnderTest {
    /// A proxy whose gate sleeps on `clock`.
    init(upstream: String, clock: ManualClock) async throws {
        gate = try ScriptedGate(.asyncHTTPClient, clock: clock)
        proxy = try await GateProxy.start(
            gate: gate.gate, upstream: URL(string: upstream)!, listen: try LoopbackAddress(parsing: "127.0.0.1:0"),
            idleTimeout: .seconds(30)
        )
    }

    /// Runs `body` with a proxy on `clock`, then stops it whatever happened.
    static func with(
        upstream: String, clock: ManualClock, _ body: (ProxyUnderTest) async throws -> Void
    ) async throws {
        let harness = try await ProxyUnderTest(upstream: upstream, clock: clock)
        do {
            try await body(harness)
        } catch {
            _ = await harness.stop(within: .seconds(20), advancing: clock)
            throw error
        }
        _ = await harness.stop(within: .seconds(20), advancing: clock)
    }

    /// Stops the proxy; whether it stopped within `limit` without the clock moving. Past the
    /// limit the clock is moved on until it stops, so that a retry wait the proxy failed to
    /// cancel cannot hold the test forever.
    func stop(within limit: Duration, advancing clock: ManualClock) async -> Bool {
        let stopped = Atomic(false)
        let proxy = self.proxy
        let stopping = Task {
            await proxy.stop()
            stopped.store(true, ordering: .releasing)
        }
        let inTime = await eventually(within: limit) { stopped.load(ordering: .acquiring) }
        while !stopped.load(ordering: .acquiring) {
            clock.advance(by: .seconds(3600))
            try? await Task.sleep(for: .milliseconds(20))
        }
        await stopping.value
        return inTime
    }
}

/// Polls `condition` every 20 ms until it holds or `limit` has passed (real time, bounded). The
/// bound is generous: other suites running beside these (the CLI suites block the cooperative
/// threads while their commands run) can hold a loopback exchange up for seconds; a passing
/// check returns as soon as it holds.
func eventually(within limit: Duration = .seconds(30), _ condition: () async throws -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if (try? await condition()) == true { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return (try? await condition()) == true
}

/// One connection to the proxy, kept open between requests, on bare sockets.
final class RawConnection: @unchecked Sendable {
    // One test's thread at a time uses it: checked by the tests' sequencing, not by the compiler.
    let descriptor: Int32
    private var buffered: [UInt8] = []
    private var closed = false

    init(port: Int) throws {
        descriptor = try RawHTTPClient.connect(port: port)
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { disconnect() }

    /// Closes the connection, once: a second close could close a descriptor the process has since
    /// reused (another test's socket).
    func disconnect() {
        guard !closed else { return }
        closed = true
        close(descriptor)
    }

    func send(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { PortableSockets.send(descriptor, $0) }
    }

    /// Reads one answer: its head, and a body of its `Content-Length` (none for a HEAD or a 1xx).
    /// Nil when the connection closes or 20 s pass first.
    func readAnswer(bodiless: Bool = false) -> (status: Int, headers: [String: String], body: String)? {
        let separator = Array("\r\n\r\n".utf8)
        while buffered.firstRange(of: separator) == nil {
            guard fill() else { return nil }
        }
        let end = buffered.firstRange(of: separator)!
        let lines = String(decoding: buffered[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        buffered.removeFirst(end.upperBound)
        let status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = bodiless || status < 200 ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        while buffered.count < length {
            guard fill() else { return nil }
        }
        let body = String(decoding: buffered[..<length], as: UTF8.self)
        buffered.removeFirst(length)
        return (status, headers, body)
    }

    /// Whether the proxy closes the connection within `seconds` (a read ends with end of file).
    func isClosedByServer(within seconds: Int) -> Bool {
        RawHTTPClient.isClosedByServer(descriptor, within: seconds)
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = recv(descriptor, &chunk, chunk.count, 0)
        guard count > 0 else { return false }
        buffered.append(contentsOf: chunk[..<count])
        return true
    }
}

@Suite("Hostile input: the proxy spends nothing for clients that have gone")
struct ProxyClientGoneTests {
    @Test("a client that disconnects during a retry wait cancels the remaining attempts: one attempt, one unit")
    func disconnectDuringWait() async throws {
        let upstream = try ScriptedHTTPServer { _ in .init(status: 503, body: "down") }
        defer { upstream.stop() }
        let clock = ManualClock(now: GateHarness.start)
        try await ProxyUnderTest.with(upstream: upstream.baseURL, clock: clock) { harness in
            let client = try RawConnection(port: harness.port)
            client.send("GET /youtube/v3/videos?id=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await eventually { clock.sleeperCount == 1 }, "the gate waits before its first retry")
            client.disconnect()
            #expect(await eventually { clock.sleeperCount == 0 }, "the client's close cancels the wait")
            clock.advance(by: .seconds(60))
            try await Task.sleep(for: .milliseconds(100))
            #expect(upstream.requests.count == 1, "no attempt after the client left")
            #expect(try await harness.gate.gate.quota.remaining() == 9_999, "one unit, for the one attempt")
        }
    }

    @Test("a client that disconnects during an attempt lets that attempt finish and settle, and nothing follows it")
    func disconnectDuringAttempt() async throws {
        let release = DispatchSemaphore(value: 0)
        let upstream = try ScriptedHTTPServer { _ in
            release.wait()
            return .init(status: 503, body: "down")
        }
        defer { upstream.stop() }
        let clock = ManualClock(now: GateHarness.start)
        try await ProxyUnderTest.with(upstream: upstream.baseURL, clock: clock) { harness in
            let client = try RawConnection(port: harness.port)
            client.send("GET /youtube/v3/videos?id=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await eventually { upstream.requests.count == 1 })
            client.disconnect()
            try await Task.sleep(for: .milliseconds(100))
            release.signal()
            #expect(await eventually { try await harness.gate.gate.circuit.failureCount(for: "videos.list") == 1 },
                    "the attempt in flight got its answer and recorded it")
            #expect(clock.sleeperCount == 0, "and no retry wait followed")
            clock.advance(by: .seconds(60))
            try await Task.sleep(for: .milliseconds(100))
            #expect(upstream.requests.count == 1)
            #expect(try await harness.gate.gate.quota.remaining() == 9_999)
        }
        for _ in 0..<4 { release.signal() }
    }

    @Test("a shutdown cancels retry waits: the waiting client gets an answer with its units and the proxy stops at once")
    func shutdownCancelsWaits() async throws {
        let upstream = try ScriptedHTTPServer { _ in .init(status: 503, body: "down") }
        defer { upstream.stop() }
        let clock = ManualClock(now: GateHarness.start)
        let harness = try await ProxyUnderTest(upstream: upstream.baseURL, clock: clock)
        let port = harness.port
        let answer = Task {
            try await offCooperativePool {
                try RawHTTPClient.exchange(port: port, "GET /youtube/v3/videos?id=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            }
        }
        let waiting = await eventually { clock.sleeperCount == 1 }
        #expect(waiting, "the gate waits before its first retry")
        let stoppedInTime = await harness.stop(within: .seconds(20), advancing: clock)
        #expect(stoppedInTime, "stop() returns without the retry wait being sat out")
        let got = try await answer.value
        #expect(got.status == 503)
        #expect(got.headers["x-tollgate-units"] == "1", "\(got.headers)")
        #expect(upstream.requests.count == 1)
        #expect(try await harness.gate.gate.quota.remaining() == 9_999)
    }
}

@Suite("Hostile input: the proxy's HTTP edges")
struct ProxyEdgeTests {
    @Test("an IPv6-literal upstream is reached: its authority keeps its brackets")
    func ipv6Upstream() async throws {
        let upstream = try ScriptedHTTPServer(host: "::1") { request in
            .init(body: "v6 saw \(request.target) for \(request.header("Host") ?? "")")
        }
        defer { upstream.stop() }
        let clock = ManualClock(now: GateHarness.start)
        try await ProxyUnderTest.with(upstream: upstream.baseURL, clock: clock) { harness in
            let answer = try await harness.get("/youtube/v3/videos?id=1")
            #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
            #expect(String(decoding: answer.body, as: UTF8.self) == "v6 saw /youtube/v3/videos?id=1 for [::1]:\(upstream.port)")
        }
    }

    @Test("HEAD answers the length a GET would have, from the network and from what is stored")
    func headLength() async throws {
        let upstream = try ScriptedHTTPServer { _ in
            .init(headers: [("ETag", "\"e\""), ("Cache-Control", "max-age=600")], body: "eleven char")
        }
        defer { upstream.stop() }
        let clock = ManualClock(now: GateHarness.start)
        try await ProxyUnderTest.with(upstream: upstream.baseURL, clock: clock) { harness in
            let port = harness.port
            let head = "HEAD /youtube/v3/videos?id=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            let network = try await offCooperativePool { try RawHTTPClient.exchange(port: port, head) }
            #expect(network.status == 200)
            #expect(network.headers["content-length"] == "11", "\(network.headers)")
            #expect(network.body.isEmpty)
            let got = try await harness.get("/youtube/v3/videos?id=1")
            #expect(got.body == Data("eleven char".utf8))
            let stored = try await offCooperativePool { try RawHTTPClient.exchange(port: port, head) }
            #expect(stored.headers["content-length"] == "11", "\(stored.headers)")
            #expect(stored.body.isEmpty)
        }
    }

    @Test("Expect: 100-continue gets 100 Continue before the body is sent, and stops at the proxy")
    func expectContinue() async throws {
        let upstream = try ScriptedHTTPServer { request in
            .init(body: "got \(String(decoding: request.body, as: UTF8.self)) expect=\(request.header("Expect") ?? "none")")
        }
        defer { upstream.stop() }
        let clock = ManualClock(now: GateHarness.start)
        try await ProxyUnderTest.with(upstream: upstream.baseURL, clock: clock) { harness in
            let port = harness.port
            let final = try await offCooperativePool { () -> (Int?, (status: Int, headers: [String: String], body: String)?) in
                let client = try RawConnection(port: port)
                client.send("POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
                let interim = client.readAnswer()
                client.send("hello")
                return (interim?.status, client.readAnswer())
            }
            #expect(final.0 == 100, "100 Continue before the body")
            #expect(final.1?.status == 200)
            #expect(final.1?.body == "got hello expect=none")
        }
    }

    @Test("CONNECT is refused with 405 and the connection is then closed")
    func connect() async throws {
        let upstream = try ScriptedHTTPServer { _ in .init(body: "never") }
        defer { upstream.stop() }
        let clock = ManualClock(now: GateHarness.start)
        try await ProxyUnderTest.with(upstream: upstream.baseURL, clock: clock) { harness in
            let port = harness.port
            let (answer, closed) = try await offCooperativePool { () -> (Int?, Bool) in
                let client = try RawConnection(port: port)
                client.send("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
                let answer = client.readAnswer()
                return (answer?.status, client.isClosedByServer(within: 10))
            }
            #expect(answer == 405)
            #expect(closed, "closed after the answer, not left open until the idle timeout")
            #expect(upstream.requests.isEmpty)
        }
    }

    @Test("an HTTP/1.0 connection is closed after the answer unless it asked for keep-alive")
    func http10() async throws {
        let upstream = try ScriptedHTTPServer { _ in .init(body: "ok") }
        defer { upstream.stop() }
        let clock = ManualClock(now: GateHarness.start)
        try await ProxyUnderTest.with(upstream: upstream.baseURL, clock: clock) { harness in
            let port = harness.port
            let (plain, closed) = try await offCooperativePool { () -> (Int?, Bool) in
                let client = try RawConnection(port: port)
                client.send("GET /youtube/v3/videos?id=1 HTTP/1.0\r\nHost: x\r\n\r\n")
                let answer = client.readAnswer()
                return (answer?.status, client.isClosedByServer(within: 10))
            }
            #expect(plain == 200)
            #expect(closed, "an HTTP/1.0 connection ends with its answer")

            let kept = try await offCooperativePool { () -> [String?] in
                let client = try RawConnection(port: port)
                var seen: [String?] = []
                for _ in 0..<2 {
                    client.send("GET /youtube/v3/videos?id=2 HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
                    seen.append(client.readAnswer()?.headers["connection"])
                }
                return seen
            }
            #expect(kept == ["keep-alive", "keep-alive"], "keep-alive asked, confirmed and honoured")
        }
    }
}
