import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

/// `tollgate proxy` with the YouTube preset (its list methods batch) in front of the fake YouTube
/// API, its answers fresh for 5 minutes and 150 ms away (as YouTube is), driven by 50 Python clients.
@Suite("tollgate proxy: batching across clients")
struct ProxyBatchingCommandTests {
    @Test("50 clients asking at once for one video each reach the API in at most 2 calls for at most 2 units; each gets its own video; a repeat is a cache hit")
    func fiftyClients() async throws {
        guard CommandRunner.isInstalled("curl"), CommandRunner.isInstalled("sqlite3"), CommandRunner.isInstalled("python3") else {
            Issue.record("curl, sqlite3 and python3 are needed: .ci/run installs curl and sqlite3; python3 is on this kind of machine")
            return
        }
        try await Self.withFiftyClients(Self.clients, gzipsWhenAsked: false) { run in
            let lines = run.output.split(separator: "\n")
            #expect(lines.count == 50)
            #expect(lines.allSatisfy { $0.hasPrefix("200 network ") }, "\(lines)")
            try Self.expectOneBatch(run)
            let details = try run.fixture.value(
                "SELECT group_concat(detail, ';') FROM quota_events WHERE kind = 'charge' AND endpoint = 'videos.list'"
            )
            #expect(details.hasPrefix("batch of "), "the charge says how many IDs it carried: \(details)")
            try await Self.expectOwnVideos(run)

            let (calls, base) = (run.api.receivedRequests.count, run.base)
            let repeated = try await offPool { try CurlResponse.fetch("\(base)/youtube/v3/videos?id=v17&part=snippet") }
            #expect(repeated.status == 200)
            #expect(repeated.headers["x-tollgate-source"] == "cache")
            #expect(try Self.items(Data(repeated.body.utf8)).first?["id"] as? String == "v17")
            #expect(run.api.receivedRequests.count == calls, "the repeat never reached the API")
        }
    }

    @Test("50 Python requests clients (their default Accept-Encoding offers gzip) against an origin that gzips when asked: at most 2 calls and 2 units, each body exactly its own video, none labelled gzip without being gzip; a repeat is a cache hit")
    func fiftyRequestsClientsWithGzip() async throws {
        guard CommandRunner.isInstalled("sqlite3"), CommandRunner.isInstalled("python3") else {
            Issue.record("sqlite3 and python3 are needed: .ci/run installs sqlite3; python3 and requests are on this kind of machine")
            return
        }
        try await Self.withFiftyClients(Self.requestsClients, gzipsWhenAsked: true) { run in
            let lines = run.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(lines.count == 50)
            #expect(lines.allSatisfy { $0.count == 4 && $0[0] == "200" }, "\(lines)")
            #expect(lines.allSatisfy { $0.count == 4 && $0[3].split(separator: ",").contains("gzip") }, "each client offered gzip: \(lines)")
            // Only the lone first call's answer passes as it came, gzip; the batch's members are decoded.
            #expect(lines.filter { $0.count == 4 && $0[2] == "gzip" }.count <= 1, "\(lines)")
            try Self.expectOneBatch(run)
            // What requests handed its caller: decoded when labelled gzip, as it was.
            try await Self.expectOwnVideos(run)

            // A repeat with the same client's headers is the member's own stored answer.
            let (calls, base) = (run.api.receivedRequests.count, run.base)
            let repeated = try await offPool {
                try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", Self.requestsRepeat, base, "v17"])
            }
            #expect(repeated.status == 0, "repeat: \(repeated.stderr)")
            #expect(repeated.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "200 cache v17", "\(repeated.stdout)")
            #expect(run.api.receivedRequests.count == calls, "the repeat never reached the API")
        }
    }

    /// One run of 50 clients through the proxy: what a test checks afterwards.
    struct FiftyClientsRun {
        let fixture: AdminFixture
        let api: FakeYouTubeAPI
        /// The proxy's base URL.
        let base: String
        let ids: [String]
        /// The directory the clients wrote each body to, as `ID.json`.
        let bodies: String
        /// What the clients' script printed.
        let output: String
    }

    /// Starts a YouTube-like origin and `tollgate proxy` (the YouTube preset) on a fresh ledger,
    /// runs `script` (one of the 50-client scripts below) against the proxy for v00…v49, and hands
    /// `check` the run; the proxy must then stop cleanly.
    ///
    /// The origin is as far away as YouTube (150 ms): the lone first call is on the wire while the
    /// other 49 arrive, and they go as one call when it lands. An origin answering in a millisecond
    /// would land it before a loaded machine has passed every request in, and a batch waits at most
    /// `wait` after its first member. Its answers stay fresh 5 minutes, so a repeat is a hit.
    static func withFiftyClients(
        _ script: String, gzipsWhenAsked: Bool, _ check: (FiftyClientsRun) async throws -> Void
    ) async throws {
        let fixture = try AdminFixture()
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 300
        behaviour.gzipsWhenAsked = gzipsWhenAsked
        behaviour.latency = .milliseconds(150)
        let api = try await FakeYouTubeAPI.start(behaviour: behaviour)
        let proxy = try BackgroundCommand(CommandRunner.tollgate, [
            "proxy", "--listen", "127.0.0.1:0", "--upstream", api.baseURL.absoluteString, "--db", fixture.path,
        ])
        try await withStopping((api, proxy), stop: { parts in
            let (status, stderr) = parts.1.interrupt()
            #expect(status == 0, "proxy exit \(status): \(stderr)")
            await parts.0.stop()
        }) { parts in
            let (api, proxy) = parts
            let banner = try #require(proxy.firstLine(), "the proxy exited before listening")
            let base = String(try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }))
            let ids = (0..<50).map { String(format: "v%02d", $0) }
            let bodies = fixture.directory.path("bodies")
            try FileManager.default.createDirectory(atPath: bodies, withIntermediateDirectories: true)
            let arguments = ["python3", "-c", script, base, bodies] + ids
            let result = try await offPool { try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), arguments) }
            #expect(result.status == 0, "clients: \(result.stderr)")
            try await check(FiftyClientsRun(fixture: fixture, api: api, base: base, ids: ids, bodies: bodies, output: result.stdout))
        }
    }

    /// At most 2 calls reached the origin, at most 2 units spent, and the ledger agrees.
    static func expectOneBatch(_ run: FiftyClientsRun) throws {
        let received = run.api.receivedRequests
        #expect((1...2).contains(received.count), "\(received.count) calls reached the API: \(received.map(\.query))")
        #expect(run.api.unitsUsed <= 2)
        let today = try run.fixture.value("SELECT units || '|' || calls FROM quota_today WHERE endpoint = 'videos.list'")
        let counts = today.split(separator: "|").compactMap { Int($0) }
        #expect(counts.count == 2 && counts[0] <= 2 && counts[0] == counts[1], "quota_today: \(today)")
    }

    /// Each client's body holds exactly its own video, as the origin answers for that ID alone.
    static func expectOwnVideos(_ run: FiftyClientsRun) async throws {
        let alone = try await answersAlone(run.api, ids: run.ids)
        for id in run.ids {
            let items = try Self.items(try Data(contentsOf: URL(fileURLWithPath: "\(run.bodies)/\(id).json")))
            #expect(items.count == 1)
            #expect(items.first?["id"] as? String == id)
            #expect(items == (try Self.items(try #require(alone[id]))), "\(id): what the origin answers for it alone")
        }
    }

    /// One Python `requests` client asking for one video: prints `STATUS SOURCE ID…`.
    static let requestsRepeat = """
        import sys, requests
        answer = requests.get(f"{sys.argv[1]}/youtube/v3/videos", params={"id": sys.argv[2], "part": "snippet"}, timeout=20)
        print(answer.status_code, answer.headers.get("x-tollgate-source"), *[item["id"] for item in answer.json()["items"]])
        """

    /// 50 Python `requests` clients of the proxy, each with its own session (so its own
    /// connection) and requests' default `Accept-Encoding` (`gzip, deflate`, and `br` when brotli
    /// is installed): they wait until every
    /// thread is ready, then each asks for its video, writes the body requests decoded to
    /// DIR/ID.json and prints `STATUS SOURCE CONTENT-ENCODING ACCEPT-ENCODING-SENT` (`-` for none, no spaces).
    /// A body labelled gzip that is not fails in requests, and the client exits non-zero.
    static let requestsClients = """
        import sys, threading, requests
        base, directory, ids = sys.argv[1], sys.argv[2], sys.argv[3:]
        ready = threading.Barrier(len(ids))
        lines, failures = [], []
        def client(video):
            try:
                with requests.Session() as session:
                    ready.wait()
                    answer = session.get(f"{base}/youtube/v3/videos", params={"id": video, "part": "snippet"}, timeout=20)
                    with open(f"{directory}/{video}.json", "wb") as body:
                        body.write(answer.content)
                    sent = answer.request.headers.get("Accept-Encoding", "-").replace(" ", "")
                    lines.append(f"{answer.status_code} {answer.headers.get('x-tollgate-source', '-')} "
                                 f"{answer.headers.get('content-encoding', '-')} {sent}")
            except Exception as error:
                failures.append(f"{video}: {error!r}")
        threads = [threading.Thread(target=client, args=(video,)) for video in ids]
        for thread in threads: thread.start()
        for thread in threads: thread.join()
        print("\\n".join(lines))
        if failures:
            sys.exit("\\n".join(failures))
        """

    /// 50 clients of the proxy: each its own thread and connection; they wait until every one is
    /// connected, then each asks for its video, writes the body to DIR/ID.json and prints
    /// `STATUS SOURCE ID`. Arguments: the proxy's base URL, the directory, the IDs.
    static let clients = """
        import sys, threading, http.client, urllib.parse
        base, directory, ids = urllib.parse.urlsplit(sys.argv[1]), sys.argv[2], sys.argv[3:]
        ready = threading.Barrier(len(ids))
        lines = []
        def client(video):
            connection = http.client.HTTPConnection(base.hostname, base.port, timeout=20)
            connection.connect()
            ready.wait()
            connection.request("GET", f"/youtube/v3/videos?id={video}&part=snippet")
            answer = connection.getresponse()
            with open(f"{directory}/{video}.json", "wb") as body:
                body.write(answer.read())
            lines.append(f"{answer.status} {answer.getheader('x-tollgate-source')} {video}")
        threads = [threading.Thread(target=client, args=(video,)) for video in ids]
        for thread in threads: thread.start()
        for thread in threads: thread.join()
        print("\\n".join(lines))
        """

    /// What the origin answers for each ID asked alone, straight from it, all at once: its
    /// latency is YouTube's, and 50 one after another would take seconds.
    static func answersAlone(_ api: FakeYouTubeAPI, ids: [String]) async throws -> [String: Data] {
        try await withThrowingTaskGroup(of: (String, Data).self) { group in
            for id in ids {
                let url = api.url("videos", ["id": id, "part": "snippet"])
                group.addTask { (id, try await URLSession.shared.data(from: url).0) }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
    }

    static func items(_ body: Data) throws -> [NSDictionary] {
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        return try #require(object["items"] as? [NSDictionary])
    }
}
