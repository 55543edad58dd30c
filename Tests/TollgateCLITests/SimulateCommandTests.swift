import Foundation
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateSimulation
import TollgateTestSupport

/// The shipped descriptions' texts, read from APIs/ beside the package.
enum APIDescriptionTexts {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static var youTube: String? { try? String(contentsOf: root.appending(path: "APIs/youtube-v3.yaml"), encoding: .utf8) }
}

/// Issue 41 as a user meets it: `tollgate simulate` on HAR files that mitmproxy and
/// `tollgate proxy --record` wrote, and on hand-made ones, checked with the report, sqlite3 and curl.
@Suite("tollgate simulate: a recorded day replayed under each description before it meets the real quota")
struct SimulateCommandTests {
    private struct Report: Decodable {
        struct Result: Decodable {
            struct Bucket: Decodable {
                let units: Int
                let limit: Int
                let runsOutAt: String?
            }
            let api: String
            let requests: Int
            let sent: Int
            let units: Int
            let buckets: [String: Bucket]
            let refusals: [String: Int]
            let refusalsByEndpoint: [String: [String: Int]]
            let stale: Int
            let hitRate: Double?
            let unrecorded: Int
            let runsOutAt: String?
        }
        let results: [Result]
    }

    private static func simulate(_ arguments: [String], environment: [String: String] = [:]) throws -> (Report?, CommandResult) {
        let result = try CommandRunner.run(CommandRunner.tollgate, ["simulate"] + arguments + ["--json"], environment: environment)
        guard result.status == 0 else { return (nil, result) }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return (try decoder.decode(Report.self, from: Data(result.stdout.utf8)), result)
    }

    /// A description of a small API, `items.get` charged 1 unit of a daily 1,000, written in `directory`.
    static func smallDescription(in directory: TemporaryDirectory) throws -> String {
        let path = directory.path("small.yaml")
        try Data("""
            api: A small API
            buckets:
              daily: {limit: 1000}
            defaults: {bucket: daily, throttle: {requests: 1000, per: 60s}}
            routes:
              - {method: GET, path: "/v1/items/{id}", endpoint: items.get}
            """.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A HAR file of `count` GETs, one every `spacing` seconds from `start`, each answered 200 with
    /// an entity tag and YouTube's `max-age=0`.
    static func har(
        _ urls: [String], start: Date, spacing: TimeInterval, headers: [(String, String)] = [],
        body: (String) -> String = { _ in #"{"items": []}"# }
    ) -> Data {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let entries: [[String: Any]] = urls.enumerated().map { index, url in
            [
                "startedDateTime": formatter.string(from: start.addingTimeInterval(Double(index) * spacing)),
                "time": 40,
                "request": ["method": "GET", "url": url, "httpVersion": "HTTP/1.1",
                            "headers": headers.map { ["name": $0.0, "value": $0.1] }, "queryString": [], "cookies": [],
                            "headersSize": -1, "bodySize": 0],
                "response": ["status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                             "headers": [["name": "Content-Type", "value": "application/json"],
                                         ["name": "ETag", "value": "\"\(abs(url.hashValue % 1000))\""],
                                         ["name": "Cache-Control", "value": "private, max-age=0, must-revalidate"]],
                             "cookies": [], "content": ["size": 13, "mimeType": "application/json", "text": body(url)],
                             "redirectURL": "", "headersSize": -1, "bodySize": 13],
                "cache": [:], "timings": ["send": 0, "wait": 40, "receive": 0],
            ]
        }
        return try! JSONSerialization.data(withJSONObject: ["log": ["version": "1.2", "creator": ["name": "test", "version": "1"],
                                                                     "entries": entries]])
    }

    @Test("mitmproxy's HAR of 300 refreshes of 10 videos replays under the YouTube preset at the units a live tollgate proxy charged for the same traffic")
    func mitmproxyRecording() async throws {
        guard CommandRunner.isInstalled("mitmdump"), CommandRunner.isInstalled("curl"), CommandRunner.isInstalled("sqlite3") else {
            Issue.record("mitmdump (PyPI mitmproxy), curl and sqlite3 are needed: .ci/run installs them")
            return
        }
        let origin = try await FakeYouTubeAPI.start()
        defer { Task { await origin.stop() } }
        let directory = try TemporaryDirectory()
        let harPath = directory.path("mitm.har")
        let port = Int.random(in: 20_000...60_000)
        let mitm = Process()
        mitm.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // A process started from the test runner's threads inherits their blocked signals: unblock
        // SIGTERM before becoming mitmdump, or it could never be told to write its file and exit.
        let unblocking = "import os, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM}); "
            + "os.execvp('mitmdump', ['mitmdump'] + sys.argv[1:])"
        mitm.arguments = ["python3", "-c", unblocking, "-q", "--mode", "reverse:\(origin.baseURL.absoluteString)", "--listen-host", "127.0.0.1",
                          "--listen-port", "\(port)", "--set", "hardump=\(harPath)"]
        mitm.standardInput = FileHandle.nullDevice
        mitm.standardOutput = FileHandle.nullDevice
        mitm.standardError = FileHandle.nullDevice
        try mitm.run()
        defer { if mitm.isRunning { kill(mitm.processIdentifier, SIGKILL) } }
        // mitmdump takes a moment to listen: seconds of Python imports, more on a loaded machine.
        var listening = false
        for _ in 0..<300 where !listening {
            listening = (try? RawHTTPClient.connect(port: port)).map { close($0); return true } ?? false
            if !listening { try await Task.sleep(for: .milliseconds(100)) }
        }
        try #require(listening, "mitmdump did not listen on \(port)")
        // The YouTube preset as shipped, but for its client throttle (30 a minute): the refreshes are
        // recorded in seconds here, where an app would spread them over an hour.
        let described = directory.path("youtube-unthrottled.yaml")
        let shipped = try #require(APIDescriptionTexts.youTube)
        try Data(shipped.replacingOccurrences(of: "throttle: {requests: 30, per: 60s}", with: "throttle: {requests: 1000, per: 60s}").utf8)
            .write(to: URL(fileURLWithPath: described))
        let paths = (0..<300).map { "/youtube/v3/videos?id=video\($0 % 10)&part=snippet&key=SECRET-KEY-1" }
        func drive(_ base: String) async throws {
            let arguments = paths.flatMap { ["-o", "/dev/null", "\(base)\($0)"] }
            let result = try await offPool {
                try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"),
                                      ["curl", "-sS", "-w", "%{http_code}\n", "-H", "Authorization: Bearer secret-token-2"] + arguments)
            }
            #expect(result.stdout.split(separator: "\n").allSatisfy { $0 == "200" }, "\(result.stdout.prefix(300))")
        }
        try await drive("http://127.0.0.1:\(port)")
        // SIGTERM: mitmdump writes the HAR file as it exits (a SIGINT from a test process may be ignored).
        mitm.terminate()
        let deadline = Date().addingTimeInterval(20)
        while mitm.isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try #require(!mitm.isRunning, "mitmdump did not exit on SIGTERM")
        let har = try String(contentsOfFile: harPath, encoding: .utf8)
        #expect(har.contains("\"entries\""))

        // The same traffic through a live proxy, charged for real.
        let database = directory.path("live.sqlite")
        let proxy = try BackgroundCommand(CommandRunner.tollgate, ["proxy", "--listen", "127.0.0.1:0", "--upstream",
                                                                   origin.baseURL.absoluteString, "--db", database,
                                                                   "--api", described])
        let banner = try #require(proxy.firstLine())
        let base = String(try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }))
        try await drive(base)
        #expect(proxy.interrupt().status == 0)
        let live = try #require(Int(try CommandRunner.sqlite3(database, "SELECT COALESCE(SUM(units), 0) FROM quota_today").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)))

        let (report, run) = try Self.simulate(["--api", described, "--api", "youtube-v3-single-pool", "--har", harPath])
        let results = try #require(report?.results, "\(run.stderr)")
        #expect(results.map(\.api) == [described, "youtube-v3-single-pool"])
        let preset = results[0]
        #expect(preset.requests == 300)
        #expect(preset.units == live, "the replay charges what the live proxy charged: \(preset.units) vs \(live)")
        #expect(preset.unrecorded == 0)
        #expect(preset.runsOutAt == nil)
        #expect(!run.stdout.contains("SECRET-KEY-1") && !run.stdout.contains("secret-token-2"))

        // The same recording spread over an hour, one refresh every 12 s, then replayed under the
        // preset and under the preset with fresh_for: 10m on videos.list.
        let hour = directory.path("hour.har")
        try Self.respaced(harPath, every: 12, to: hour)
        let fresh = directory.path("fresh-for.yaml")
        let freshText = try String(contentsOfFile: described, encoding: .utf8)
            .replacingOccurrences(of: "  videos.list: {cost: 1, batch: ", with: "  videos.list: {cost: 1, fresh_for: 10m, batch: ")
        #expect(freshText.contains("fresh_for: 10m"))
        try Data(freshText.utf8).write(to: URL(fileURLWithPath: fresh))
        let (compared, comparison) = try Self.simulate(["--api", described, "--api", fresh, "--har", hour])
        let columns = try #require(compared?.results, "\(comparison.stderr)")
        let (asRecorded, chosen) = (columns[0], columns[1])
        // YouTube charges a 304 a unit: every refresh costs one under the preset.
        #expect(asRecorded.units == 300)
        #expect(asRecorded.sent == 300)
        // Asking each video again only after ten minutes: six times an hour each, ten videos.
        #expect((50...70).contains(chosen.units), "\(chosen.units) units")
        #expect(chosen.sent == chosen.units)
        #expect((chosen.hitRate ?? 0) > 0.75, "\(String(describing: chosen.hitRate))")
        let text = try CommandRunner.run(CommandRunner.tollgate, ["simulate", "--api", described, "--api", fresh, "--har", hour])
        print(text.stdout)
    }

    /// `source` with its entries' start times rewritten to one every `seconds`, from the first.
    static func respaced(_ source: String, every seconds: TimeInterval, to destination: String) throws {
        var archive = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: source))) as? [String: Any])
        var log = try #require(archive["log"] as? [String: Any])
        let entries = try #require(log["entries"] as? [[String: Any]])
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        log["entries"] = entries.enumerated().map { index, entry in
            var entry = entry
            entry["startedDateTime"] = formatter.string(from: start.addingTimeInterval(Double(index) * seconds))
            return entry
        }
        archive["log"] = log
        try JSONSerialization.data(withJSONObject: archive).write(to: URL(fileURLWithPath: destination))
    }

    @Test("A recording's own X-RateLimit-Remaining counts the traffic without the gate: the replay charges what the gate sends, not what the recording's server counted")
    func recordedAnnouncementsAreNotFollowed() throws {
        let directory = try TemporaryDirectory()
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        let url = "https://api.github.com/repos/apple/swift"
        // Nine fetches of one repository a second apart, fresh for a minute, then another one: the
        // gate sends the first and the last. The recording's server counted all ten, 4,999 down to
        // 4,990 left, and the last answer says so.
        let urls = Array(repeating: url, count: 9) + ["https://api.github.com/repos/apple/swift-nio"]
        var har = try JSONSerialization.jsonObject(with: Self.har(urls, start: start, spacing: 1)) as! [String: Any]
        var log = har["log"] as! [String: Any]
        log["entries"] = (log["entries"] as! [[String: Any]]).enumerated().map { index, entry in
            var entry = entry
            var response = entry["response"] as! [String: Any]
            response["headers"] = [
                ["name": "Content-Type", "value": "application/json"], ["name": "ETag", "value": "\"r1\""],
                ["name": "Cache-Control", "value": "private, max-age=60, s-maxage=60"],
                ["name": "X-RateLimit-Limit", "value": "5000"], ["name": "X-RateLimit-Remaining", "value": "\(4_999 - index)"],
                ["name": "X-RateLimit-Used", "value": "\(1 + index)"], ["name": "X-RateLimit-Resource", "value": "core"],
                ["name": "X-RateLimit-Reset", "value": "\(Int(start.timeIntervalSince1970) + 3_600)"],
            ]
            entry["response"] = response
            return entry
        }
        har["log"] = log
        let path = directory.path("github.har")
        try JSONSerialization.data(withJSONObject: har).write(to: URL(fileURLWithPath: path))
        let (report, run) = try Self.simulate(["--api", "github-rest", "--har", path])
        let result = try #require(report?.results.first, "\(run.stderr)")
        #expect(result.sent == 2)
        #expect(result.buckets["core"]?.units == 2, "not the 10 the recording's server counted")
    }

    @Test("A client's own If-None-Match in the recording is answered from what the replay's gate holds fresh, as tollgate proxy answers it: no call, no unit")
    func recordedConditionalsAnsweredFromStore() throws {
        let directory = try TemporaryDirectory()
        let description = try Self.smallDescription(in: directory)
        let url = "https://api.example.com/v1/items/1"
        var har = try JSONSerialization.jsonObject(with: Self.har(Array(repeating: url, count: 5), start: Date(timeIntervalSince1970: 1_795_000_000),
                                                                  spacing: 1)) as! [String: Any]
        var log = har["log"] as! [String: Any]
        log["entries"] = (log["entries"] as! [[String: Any]]).enumerated().map { index, entry in
            var entry = entry
            var response = entry["response"] as! [String: Any]
            response["headers"] = [["name": "Content-Type", "value": "application/json"], ["name": "ETag", "value": "\"i1\""],
                                   ["name": "Cache-Control", "value": "max-age=60"]]
            if index > 0 {
                // The client's own cache revalidates what it got, and the server said 304.
                var request = entry["request"] as! [String: Any]
                request["headers"] = [["name": "If-None-Match", "value": "\"i1\""]]
                entry["request"] = request
                response["status"] = 304
                response["content"] = ["size": 0, "mimeType": "application/json", "text": ""]
            }
            entry["response"] = response
            return entry
        }
        har["log"] = log
        let path = directory.path("items.har")
        try JSONSerialization.data(withJSONObject: har).write(to: URL(fileURLWithPath: path))
        let (report, run) = try Self.simulate(["--api", description, "--har", path])
        let result = try #require(report?.results.first, "\(run.stderr)")
        #expect(result.requests == 5)
        #expect(result.sent == 1, "the four conditionals answered from the fresh copy")
        #expect(result.units == 1)
    }

    @Test("--scale 40 on a recording that fits the day for one user: the report says when the bucket runs out and what is refused after, by endpoint")
    func scaleRunsOut() throws {
        // 30 distinct lookups over one Pacific day: 30 units of 1,000 for one user, 1,200 for forty.
        let directory = try TemporaryDirectory()
        let description = try Self.smallDescription(in: directory)
        let day = PacificDay(key: "2026-11-20")!
        let urls = (0..<30).map { "https://api.example.com/v1/items/\($0)" }
        let path = directory.path("day.har")
        try Self.har(urls, start: day.start, spacing: 86_000 / 30).write(to: URL(fileURLWithPath: path))

        let (one, _) = try Self.simulate(["--api", description, "--har", path])
        let single = try #require(one?.results.first)
        #expect(single.units == 30)
        #expect(single.runsOutAt == nil)

        let (forty, run) = try Self.simulate(["--api", description, "--har", path, "--scale", "40"])
        let scaled = try #require(forty?.results.first, "\(run.stderr)")
        #expect(scaled.requests == 1_200)
        #expect(scaled.buckets["daily"]?.units == 1_000)
        let runsOut = try #require(scaled.runsOutAt.flatMap { ISO8601DateFormatter().date(from: $0) })
        // 1,000 of 1,200 lookups evenly spread: they run out 10/12 into the day, at 20:00 Pacific time.
        let hour = runsOut.timeIntervalSince(day.start) / 3600
        #expect((19.5..<20.5).contains(hour), "runs out \(hour) h into the day")
        #expect(scaled.refusalsByEndpoint["items.get"]?["quota_exceeded"] == 200)
        let text = try CommandRunner.run(CommandRunner.tollgate, ["simulate", "--api", description, "--har", path, "--scale", "40"])
        #expect(text.stdout.contains("daily runs out"), "\(text.stdout)")
        #expect(text.stdout.contains("items.get: 200 quota_exceeded"), "\(text.stdout)")
    }

    @Test("--record continues its own file across restarts and after a kill -9, which simulate replays up to its last whole entry; a directory, a missing directory or another file is refused before the proxy starts, and left as it was")
    func recordingSurvivesRestartsAndKills() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        let directory = try TemporaryDirectory()
        let origin = try ScriptedHTTPServer { request in
            .init(headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: #"{"seen":"\#(request.target)"}"#)
        }
        defer { origin.stop() }
        let recorded = directory.path("day.har")
        func proxy() throws -> (BackgroundCommand, String) {
            try BackgroundCommand.proxy(["--upstream", origin.baseURL, "--db", directory.path("p.sqlite"), "--record", recorded])
        }
        func fetch(_ base: String, _ path: String) async throws {
            #expect(try await offPool { try CurlResponse.fetch("\(base)\(path)") }.status == 200)
        }
        let (first, firstBase) = try proxy()
        try await fetch(firstBase, "/v1/items/1")
        try await fetch(firstBase, "/v1/items/2")
        #expect(first.interrupt().status == 0)
        let (second, secondBase) = try proxy()
        try await fetch(secondBase, "/v1/items/3")
        #expect(second.interrupt().status == 0)
        #expect(try HTTPArchive.exchanges(inFile: recorded).map(\.request.path) == ["/v1/items/1", "/v1/items/2", "/v1/items/3"],
                "the restart continued the recording")

        // Killed: no end is written. The next replay takes every whole entry, and says so.
        let (third, thirdBase) = try proxy()
        try await fetch(thirdBase, "/v1/items/4")
        // An answer's entry is written as its last bytes go out: curl can have them all a moment
        // before the proxy writes the entry, and a kill in that moment loses it (as it should).
        let deadline = Date().addingTimeInterval(10)
        while (try? HTTPArchive.recording(inFile: recorded).exchanges.count) != 4, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        _ = third.signal(SIGKILL, within: 5)
        let cut = try CommandRunner.run(CommandRunner.tollgate, ["simulate", "--api", "youtube-v3", "--har", recorded, "--json"])
        #expect(cut.status == 0, "\(cut.stderr)")
        #expect(cut.stderr.contains("the recording has no end"), "\(cut.stderr)")
        #expect(cut.stdout.contains(#""requests":4"#) || cut.stdout.contains(#""requests" : 4"#), "\(cut.stdout)")
        // And a line cut short in the middle is dropped: the entries before it stay.
        let whole = try Data(contentsOf: URL(fileURLWithPath: recorded))
        try (whole + Data(",\n{\"startedDateTime\":\"2026-".utf8)).write(to: URL(fileURLWithPath: recorded))
        #expect(try HTTPArchive.recording(inFile: recorded).exchanges.count == 4)
        let (fourth, fourthBase) = try proxy()
        try await fetch(fourthBase, "/v1/items/5")
        #expect(fourth.interrupt().status == 0)
        let reread = try HTTPArchive.recording(inFile: recorded)
        #expect(reread.cutShort == false, "continued and closed whole")
        #expect(reread.exchanges.map(\.request.path) == (1...5).map { "/v1/items/\($0)" })

        // A second proxy on a file another one records to is refused: both would write at one offset.
        let (recording, _) = try proxy()
        let rival = try CommandRunner.run(CommandRunner.tollgate, [
            "proxy", "--listen", "127.0.0.1:0", "--upstream", origin.baseURL, "--db", directory.path("q.sqlite"), "--record", recorded,
        ])
        #expect(rival.status == 64, "\(rival.stderr)")
        #expect(rival.stderr.contains("another proxy is recording to it"), "\(rival.stderr)")
        #expect(recording.interrupt().status == 0)
        #expect(try HTTPArchive.recording(inFile: recorded).exchanges.count == 5, "the first proxy's file, whole")

        // Refused before the proxy starts, each file left as it was.
        let other = directory.path("notes.json")
        try Data(#"{"mine": true}"#.utf8).write(to: URL(fileURLWithPath: other))
        for (path, says) in [(directory.path(""), "is a directory"), (directory.path("missing/day.har"), "does not exist"),
                             (other, "is not a recording of tollgate proxy --record")] {
            let refused = try CommandRunner.run(CommandRunner.tollgate, [
                "proxy", "--listen", "127.0.0.1:0", "--upstream", origin.baseURL, "--db", directory.path("p.sqlite"), "--record", path,
            ])
            #expect(refused.status == 64, "\(path): \(refused.stderr)")
            #expect(refused.stderr.contains(says), "\(refused.stderr)")
        }
        #expect(try String(contentsOfFile: other, encoding: .utf8) == #"{"mine": true}"#)
        #expect(!FileManager.default.fileExists(atPath: directory.path("missing")))
    }

    @Test("Secrets in query, headers and path parameters reach neither the report, the replay's store, nor --record's file; the temporary directory is removed")
    func secretsStayOut() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("secret.har")
        let urls = (0..<5).map { "https://www.googleapis.com/youtube/v3/videos;api_key=PATHSECRET\($0)?id=v\($0)&key=QUERYSECRET" }
        try Self.har(urls, start: Date(timeIntervalSince1970: 1_795_000_000), spacing: 1,
                     headers: [("Authorization", "Bearer HEADERSECRET"), ("X-Api-Key", "APIKEYSECRET")])
            .write(to: URL(fileURLWithPath: path))
        let temporary = directory.path("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let secrets = ["PATHSECRET", "QUERYSECRET", "HEADERSECRET", "APIKEYSECRET"]
        for format in [["--json"], []] {
            let result = try CommandRunner.run(CommandRunner.tollgate, ["simulate", "--api", "youtube-v3", "--har", path] + format,
                                               environment: ["TMPDIR": temporary])
            #expect(result.status == 0, "\(result.stderr)")
            for secret in secrets { #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret)) }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty, "the replay's store is removed")

        // The replay's store itself, kept by calling the library: no secret in its bytes.
        let exchanges = try HTTPArchive.exchanges(inFile: path)
        let store = directory.path("replay.sqlite")
        _ = try await Simulation(api: "youtube-v3", configuration: .youTubeDataAPIv3, naming: .youTubeDataAPIv3)
            .run(exchanges, storeAt: store)
        for file in [store, store + "-wal"] where FileManager.default.fileExists(atPath: file) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            for secret in secrets { #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) in \(file)") }
        }

        // --record: what the proxy writes.
        let origin = try ScriptedHTTPServer { request in
            .init(status: 200, headers: [("Content-Type", "application/json"), ("ETag", "\"1\""),
                                         ("X-Echo", request.header("X-Api-Key") ?? "")],
                  body: #"{"items": [{"id": "v1"}]}"#)
        }
        defer { origin.stop() }
        let recorded = directory.path("recorded.har")
        let proxy = try BackgroundCommand(CommandRunner.tollgate, [
            "proxy", "--listen", "127.0.0.1:0", "--upstream", origin.baseURL, "--db", directory.path("p.sqlite"),
            "--record", recorded, "--record-bodies",
        ])
        let banner = try #require(proxy.firstLine())
        let base = String(try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }))
        for index in 0..<3 {
            let answer = try await offPool {
                try CurlResponse.fetch("\(base)/youtube/v3/videos;api_key=PATHSECRET?id=v\(index)&key=QUERYSECRET",
                                       ["-H", "Authorization: Bearer HEADERSECRET", "-H", "X-Api-Key: APIKEYSECRET"])
            }
            #expect(answer.status == 200)
        }
        #expect(proxy.interrupt().status == 0)
        let written = try String(contentsOfFile: recorded, encoding: .utf8)
        for secret in secrets { #expect(!written.contains(secret), "\(secret) in the recorded HAR") }
        let replayed = try HTTPArchive.exchanges(inFile: recorded)
        #expect(replayed.count == 3)
        #expect(replayed.first?.responseBody == Data(#"{"items": [{"id": "v1"}]}"#.utf8))
        let (report, run) = try Self.simulate(["--api", "youtube-v3", "--har", recorded])
        #expect(report?.results.first?.requests == 3, "\(run.stderr)")
    }

    @Test("A malformed HAR is refused with a clear error naming the entry, and nothing is left behind", arguments: [
        ("truncated", "cut short"),
        ("missing", "entry 1: request.url is missing"),
        ("ftp", "entry 0: 'ftp://example.com/file' is not an http(s) URL"),
        ("huge", "entry 0: its response body is"),
        ("date", "entry 0: startedDateTime 'yesterday' is not an ISO 8601 date"),
    ])
    func malformed(kind: String, message: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("\(kind).har")
        let good = String(decoding: Self.har(["https://a.example/x", "https://a.example/y"], start: Date(), spacing: 1), as: UTF8.self)
        let text: String
        switch kind {
        case "truncated": text = String(good.prefix(good.count / 2))
        case "missing": text = good.replacingOccurrences(of: #""url":"https:\/\/a.example\/y""#, with: #""uri":"x""#)
        case "ftp": text = good.replacingOccurrences(of: #"https:\/\/a.example\/x"#, with: "ftp://example.com/file")
        case "huge": text = good.replacingOccurrences(of: #""text":"{\"items\": []}""#,
                                                       with: "\"text\":\"\(String(repeating: "x", count: 17 * 1024 * 1024))\"")
        default: text = good.replacingOccurrences(of: #""startedDateTime":"[^"]*""#, with: #""startedDateTime":"yesterday""#,
                                                  options: .regularExpression)
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        #expect(text != good, "the fixture changed nothing")
        let temporary = directory.path("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let result = try CommandRunner.run(CommandRunner.tollgate, ["simulate", "--api", "youtube-v3", "--har", path],
                                           environment: ["TMPDIR": temporary])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty)
    }
}
