import Foundation
import Testing
import TollgateFakeAPI
import TollgateTestSupport

/// Issue 44's "done when", as a user meets it: answers pass through `tollgate proxy` as they
/// arrive — the OpenAI Python SDK streaming server-sent events, a slow large GET — their cost is
/// settled when they end, and a client that goes mid-stream closes the upstream at once.
@Suite("Streams through the proxy: events as they arrive, costs settled at the end")
struct StreamingProxyTests {
    /// The time between two events of the fake LLM's streams: long enough that an answer held
    /// back until its end is plain to see.
    static let eventInterval = Duration.milliseconds(300)

    /// Whether python3 with the OpenAI SDK, and sqlite3, are installed; records an issue when not.
    private static func toolsInstalled(openAI: Bool = true) -> Bool {
        guard CommandRunner.isInstalled("python3"), CommandRunner.isInstalled("sqlite3") else {
            Issue.record("python3 and sqlite3 are needed: .ci/run installs them")
            return false
        }
        if openAI, (try? python(["-c", "import openai"]))?.status != 0 {
            Issue.record("the OpenAI Python SDK is needed (pip install openai): .ci/run installs it")
            return false
        }
        return true
    }

    private static func python(_ arguments: [String]) throws -> CommandResult {
        try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3"] + arguments)
    }


    /// The OpenAI SDK's streamed chat completion: one JSON line per chunk, with its arrival time.
    static let streamingClient = """
        import json, sys, time
        from openai import OpenAI
        base, prompt, max_tokens, stop_after = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        client = OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0)
        stream = client.chat.completions.create(
            model="fake-1", messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens,
            stream=True, stream_options={"include_usage": True})
        count = 0
        for chunk in stream:
            count += 1
            print(json.dumps({"at": time.time(),
                              "content": chunk.choices[0].delta.content if chunk.choices else None,
                              "usage": chunk.usage.total_tokens if chunk.usage else None}), flush=True)
            if count == stop_after:
                break
        if count == stop_after:
            stream.close()
            print(json.dumps({"closed": time.time()}), flush=True)
            # Alive a while: the connection's close is the client's doing, not the process's end.
            time.sleep(1.5)
        """

    /// One line the streaming client printed.
    struct Arrival: Decodable {
        var at: Double?
        var content: String?
        var usage: Int?
        var closed: Double?
    }

    private static func arrivals(_ output: String) throws -> [Arrival] {
        try output.split(separator: "\n").map { try JSONDecoder().decode(Arrival.self, from: Data($0.utf8)) }
    }

    @Test("The OpenAI SDK with stream=True through --api openai-chat: each event within 100 ms of the origin's writing it, and the tokens bucket settled at the streamed usage")
    func openAIStreams() async throws {
        guard Self.toolsInstalled() else { return }
        let llm = try await FakeLLMAPI.start(behaviour: FakeLLMBehaviour(
            requestsPerMinute: 500, tokensPerMinute: 30_000, streamEventInterval: Self.eventInterval))
        defer { Task { await llm.stop() } }
        let directory = try TemporaryDirectory()
        let database = directory.path("llm.sqlite")
        let (proxy, base) = try BackgroundCommand.proxy(["--upstream", llm.baseURL.absoluteString, "--db", database, "--api", "openai-chat"])
        let prompt = "Stream a short greeting through the gate"
        let result = try await offPool {
            try Self.python(["-c", Self.streamingClient, base, prompt, "4", "0"])
        }
        #expect(result.status == 0, "\(result.stderr)")
        let arrivals = try Self.arrivals(result.stdout)
        let stream = try #require(llm.streams.last)
        // The role, four words, the finish reason and the usage; [DONE] ends the SDK's loop.
        #expect(arrivals.count == 7, "\(result.stdout)")
        #expect(stream.sentAt.count == 8)
        let expected = llm.usage(messages: [prompt], maxTokens: 4).totalTokens
        #expect(arrivals.last?.usage == expected)
        for (index, arrival) in arrivals.enumerated() where index < stream.sentAt.count {
            let sent = stream.sentAt[index].timeIntervalSince1970
            let delay = (arrival.at ?? 0) - sent
            print("event \(index): sent +\(String(format: "%.3f", sent - stream.sentAt[0].timeIntervalSince1970)) s, "
                  + "reached the SDK \(String(format: "%.0f", delay * 1000)) ms later")
            #expect(delay < 0.1, "event \(index) reached the SDK \(delay) s after the origin wrote it")
        }
        // Spread over the stream's time, not together at its end.
        let spread = (arrivals.last?.at ?? 0) - (arrivals.first?.at ?? 0)
        #expect(spread > 1.5, "the events arrived within \(spread) s of each other")

        #expect(proxy.interrupt().status == 0)
        let settled = try CommandRunner.sqliteValue(database, "SELECT units || ' ' || detail FROM quota_events WHERE kind = 'settle' AND bucket = 'tokens'")
        #expect(settled == "\(expected - 1_000) actual cost \(expected) for an estimate of 1000 (body usage.total_tokens)")
        #expect(try CommandRunner.sqliteValue(database, "SELECT SUM(units) FROM quota_usage WHERE bucket = 'tokens' AND endpoint = 'chat.completions'")
            == "\(expected)")
        #expect(try CommandRunner.totalsDifferingFromEvents(database) == "0")
    }

    @Test("A client that goes after two events: the origin sees the connection closed within a second, and the ledger keeps the estimate, saying why")
    func clientGoesMidStream() async throws {
        guard Self.toolsInstalled() else { return }
        // Events further apart than the second allowed: a proxy that noticed its client only when
        // it next wrote to it would close the upstream too late.
        let llm = try await FakeLLMAPI.start(behaviour: FakeLLMBehaviour(
            requestsPerMinute: 500, tokensPerMinute: 30_000, streamEventInterval: .milliseconds(1_500)))
        defer { Task { await llm.stop() } }
        let directory = try TemporaryDirectory()
        let database = directory.path("llm.sqlite")
        let (proxy, base) = try BackgroundCommand.proxy(["--upstream", llm.baseURL.absoluteString, "--db", database, "--api", "openai-chat"])
        let result = try await offPool {
            try Self.python(["-c", Self.streamingClient, base, "Tell a long story", "8", "2"])
        }
        #expect(result.status == 0, "\(result.stderr)")
        let closed = try #require(try Self.arrivals(result.stdout).last?.closed, "\(result.stdout)")
        let stream = try #require(llm.streams.last)
        let seen = try #require(stream.closedByClientAt, "the origin wrote all \(stream.sentAt.count) events")
        print("the origin saw the connection close \(String(format: "%.0f", (seen.timeIntervalSince1970 - closed) * 1000)) ms after the client closed it")
        #expect(seen.timeIntervalSince1970 - closed < 1.0)
        #expect(stream.finishedAt == nil)
        #expect(stream.sentAt.count < 8, "the origin stopped early")

        #expect(proxy.interrupt().status == 0)
        // No usage before the cut: the estimate stands, and the settle event says so.
        #expect(try CommandRunner.sqliteValue(database, "SELECT units || ' ' || detail FROM quota_events WHERE kind = 'settle' AND bucket = 'tokens'")
            == "0 actual cost 1000 for an estimate of 1000 (a stream cut short before it told body usage.total_tokens: the estimate stands)")
        #expect(try CommandRunner.totalsDifferingFromEvents(database) == "0")
    }

    /// A slow origin: one GET answer of `size` bytes in twenty parts over `seconds`, with an ETag
    /// and a max-age; prints its port first.
    static let slowOrigin = """
        import http.server, sys, time
        size, seconds = int(sys.argv[1]), float(sys.argv[2])
        body = (bytes(range(251)) * (size // 251 + 1))[:size]
        parts = 20
        class Slow(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(size))
                self.send_header("ETag", '"slow-1"')
                self.send_header("Cache-Control", "max-age=300")
                self.end_headers()
                step = -(-size // parts)
                for index, start in enumerate(range(0, size, step)):
                    if index:
                        time.sleep(seconds / parts)
                    self.wfile.write(body[start:start + step])
                    self.wfile.flush()
            def log_message(self, *arguments):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    /// Reads a URL as it comes: the first byte's and the last byte's time, the size, the SHA-256
    /// and the gate's source.
    static let timedReader = """
        import hashlib, sys, time, urllib.request
        start = time.time()
        answer = urllib.request.urlopen(sys.argv[1])
        first, digest, size = None, hashlib.sha256(), 0
        while True:
            chunk = answer.read1(65536)
            if not chunk:
                break
            if first is None:
                first = time.time() - start
            digest.update(chunk)
            size += len(chunk)
        print(first, time.time() - start, size, digest.hexdigest(), answer.headers.get("X-Tollgate-Source"))
        """

    @Test("The default proxy passes a slow large GET on as it arrives (the first byte long before the last), and a repeat is a cache hit with the same bytes")
    func slowLargeGet() async throws {
        guard Self.toolsInstalled(openAI: false) else { return }
        // 20 MB over 10 s shows it best; CI runs a smaller, shorter one (the cache keeps 5 MiB a body by default).
        let environment = ProcessInfo.processInfo.environment
        let size = environment["TOLLGATE_STREAM_TEST_BYTES"].flatMap(Int.init) ?? 2_000_000
        let seconds = environment["TOLLGATE_STREAM_TEST_SECONDS"].flatMap(Double.init) ?? 3
        let origin = try BackgroundCommand(URL(fileURLWithPath: "/usr/bin/env"),
                                           ["python3", "-c", Self.slowOrigin, String(size), String(seconds)])
        // SIGKILL: Python ignores the SIGINT and SIGTERM a test process may hand down ignored.
        defer { _ = origin.signal(SIGKILL, within: 5) }
        let port = try #require(origin.firstLine(), "the origin exited before listening")
        let directory = try TemporaryDirectory()
        // Past the cache's 5 MiB a body (20 MB, say), the cache is told to keep it.
        let larger = size > 5 << 20 ? ["--cache-max-body", String(size)] : []
        let (proxy, base) = try BackgroundCommand.proxy(["--upstream", "http://127.0.0.1:\(port)", "--db", directory.path("slow.sqlite")] + larger)
        let url = "\(base)/files/large.bin"

        let first = try await offPool { try Self.python(["-c", Self.timedReader, url]) }
        #expect(first.status == 0, "\(first.stderr)")
        let fields = first.stdout.split(separator: " ").map(String.init)
        try #require(fields.count == 5, "\(first.stdout)")
        let (firstByte, lastByte) = (Double(fields[0]) ?? .infinity, Double(fields[1]) ?? 0)
        print("\(size) bytes over \(seconds) s: first byte after \(fields[0]) s, last after \(fields[1]) s")
        #expect(firstByte < min(1, seconds / 3), "the first byte waited for the rest")
        #expect(lastByte > seconds * 0.8)
        #expect(Int(fields[2]) == size)
        #expect(fields[4].trimmingCharacters(in: .whitespacesAndNewlines) == "network")

        let repeated = try await offPool { try Self.python(["-c", Self.timedReader, url]) }
        let again = repeated.stdout.split(separator: " ").map(String.init)
        try #require(again.count == 5, "\(repeated.stdout)\(repeated.stderr)")
        #expect(again[4].trimmingCharacters(in: .whitespacesAndNewlines) == "cache")
        #expect(again[3] == fields[3], "the same bytes")
        #expect(Int(again[2]) == size)
        #expect(proxy.interrupt().status == 0)
    }
}
