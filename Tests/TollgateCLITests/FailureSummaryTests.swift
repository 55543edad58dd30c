import Foundation
import Synchronization
import Testing
import TollgateTestSupport

/// Waits (really, bounded) until `condition` holds; whether it did within `seconds`.
private func waitUntil(within seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return condition()
}

@Suite("tollgate get on failures: no partial file, and always what was charged")
struct GetFailureTests {
    @Test("a streamed body cut short leaves no -o file (an existing one untouched), exits 6 and prints the units")
    func bodyCutShort() throws {
        let body = Data(repeating: UInt8(ascii: "x"), count: 8 * 1024 * 1024)
        let origin = try ScriptedHTTPServer { request in
            request.target.contains("whole") ? .init(body: Data("whole body".utf8)) : .init(body: body, cutAfter: 6 * 1024 * 1024)
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let file = directory.path("video.bin")
        try Data("previous".utf8).write(to: URL(fileURLWithPath: file))

        let cut = try CommandRunner.tollgate("get", "\(origin.baseURL)/youtube/v3/videos?id=1", "--db",
                                             directory.path("g.sqlite"), "-o", file)
        #expect(cut.status == 6, "README: 6 network failure: \(cut.stderr)")
        #expect(cut.stderr.contains("units charged 1"), "\(cut.stderr)")
        #expect(FileManager.default.contents(atPath: file) == Data("previous".utf8), "the file is as it was")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(names.filter { $0.contains("video.bin") } == ["video.bin"], "no temporary file left: \(names)")

        let whole = try CommandRunner.tollgate("get", "\(origin.baseURL)/youtube/v3/videos?id=whole", "--db",
                                               directory.path("g.sqlite"), "-o", file)
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(FileManager.default.contents(atPath: file) == Data("whole body".utf8))
        #expect(try posixPermissions(file) & 0o600 == 0o600)

        // Through a symbolic link the file it names is replaced, and the link stays.
        let link = directory.path("latest.bin")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: file)
        let linked = try CommandRunner.tollgate("get", "\(origin.baseURL)/youtube/v3/videos?id=whole&again=1", "--db",
                                                directory.path("g.sqlite"), "-o", link)
        #expect(linked.status == 0, "\(linked.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == file)
        #expect(FileManager.default.contents(atPath: file) == Data("whole body".utf8))
    }

    @Test("Ctrl-C during a retry wait exits at once (130) and still prints the units charged")
    func interruptedDuringBackoff() throws {
        let origin = try ScriptedHTTPServer { _ in .init(status: 503, headers: [("Retry-After", "30")], body: "down") }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let db = directory.path("i.sqlite")
        let get = try BackgroundCommand(CommandRunner.tollgate, ["get", "\(origin.baseURL)/youtube/v3/videos?id=1", "--db", db])
        #expect(waitUntil { origin.requests.count == 1 }, "the first attempt")
        #expect(waitUntil { failuresRecorded(db) == 1 }, "its outcome written: the 30 s wait comes next")
        let (status, inTime, stderr) = get.signal(SIGINT, within: 10)
        #expect(inTime)
        #expect(status == 130, "\(stderr)")
        #expect(stderr.contains("interrupted · units charged 1"), "\(stderr)")
        #expect(origin.requests.count == 1)
        #expect(try CommandRunner.sqliteValue(db, "SELECT units FROM quota_today WHERE endpoint = 'videos.list'") == "1")
    }
}

@Suite("tollgate proxy on SIGTERM")
struct ProxyShutdownTests {
    @Test("SIGTERM while a request waits to retry: the client is answered, the proxy exits at once, one charge in the ledger")
    func sigtermDuringWait() throws {
        let origin = try ScriptedHTTPServer { _ in .init(status: 503, headers: [("Retry-After", "30")], body: "down") }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let db = directory.path("p.sqlite")
        let proxy = try BackgroundCommand(CommandRunner.tollgate, [
            "proxy", "--listen", "127.0.0.1:0", "--upstream", origin.baseURL, "--db", db,
        ])
        let banner = try #require(proxy.firstLine(), "the proxy exited before listening")
        let address = try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") })
        let port = try #require(Int(address.split(separator: ":").last ?? ""))

        let answer = Mutex<RawHTTPClient.Answer?>(nil)
        let client = Thread {
            let got = try? RawHTTPClient.exchange(port: port, "GET /youtube/v3/videos?id=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            answer.withLock { $0 = got }
        }
        client.start()
        #expect(waitUntil { origin.requests.count == 1 }, "the first attempt")
        #expect(waitUntil { failuresRecorded(db) == 1 }, "its outcome written: the 30 s wait comes next")
        let (status, inTime, stderr) = proxy.signal(SIGTERM, within: 10)
        #expect(inTime, "exits within the grace period, not after the retries")
        #expect(status == 0, "\(stderr)")
        #expect(waitUntil(within: 5) { answer.withLock { $0 != nil } })
        let got = answer.withLock { $0 }
        #expect(got?.status == 503)
        #expect(got?.headers["x-tollgate-units"] == "1")
        #expect(origin.requests.count == 1)
        #expect(try CommandRunner.sqliteValue(db, "SELECT units FROM quota_today WHERE endpoint = 'videos.list'") == "1")
    }
}

/// The circuit's failure count for `videos.list` in the ledger at `db`, read as another process
/// would; nil while there is none.
private func failuresRecorded(_ db: String) -> Int? {
    (try? CommandRunner.sqliteValue(db, "SELECT consecutive_failures FROM circuit_status WHERE endpoint = 'videos.list'"))
        .flatMap { Int($0) }
}
