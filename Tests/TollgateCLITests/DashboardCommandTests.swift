import Foundation
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

/// A file with a known day written through the services: quota in two endpoints, one circuit
/// opened by hand, one throttle window.
struct DashboardFixture {
    let admin: AdminFixture

    init() async throws {
        admin = try AdminFixture()
        let ledger = try admin.ledger
        try await ledger.reserve(endpoint: "videos.list")
        try await ledger.reserve(endpoint: "videos.list")
        try await ledger.reserve(endpoint: "search.list")
        try await admin.breaker.forceOpen(endpoint: "search.list", for: .seconds(300))
        let throttler = try admin.throttler
        for _ in 0..<2 { _ = try await throttler.admit(endpoint: "videos.list") }
    }
}

@Suite("tollgate status and dashboard")
struct DashboardCommandTests {
    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    @Test("status --json prints the snapshot of what the services wrote")
    func statusJSON() async throws {
        let started = Date()
        let fixture = try await DashboardFixture()
        let result = try fixture.admin.tollgate("status", "--json")
        // The circuit was opened for 300 s of real time somewhere since `started`.
        let elapsed = Int(Date().timeIntervalSince(started).rounded(.up))
        #expect(result.status == 0, "\(result.stderr)")
        let snapshot = try Self.decoder().decode(DashboardSnapshot.self, from: Data(result.stdout.utf8))

        #expect(snapshot.pacificDate == PacificDay(containing: Date()).key)
        #expect(abs(snapshot.resetsAt.timeIntervalSince(PacificDay(containing: Date()).nextReset)) < 1)
        // Google's current model: search.list has a bucket of its own.
        #expect(snapshot.buckets.map(\.bucket) == ["youtube", "youtube.search"])
        let bucket = try #require(snapshot.buckets.first)
        #expect(bucket.limit == 10_000 && bucket.used == 2 && bucket.remaining == 9_998, "\(bucket)")
        #expect(bucket.exhaustedUntil == nil)
        #expect(bucket.endpoints.map { "\($0.endpoint) \($0.units)/\($0.calls)" } == ["videos.list 2/2"])
        let searches = try #require(snapshot.buckets.last)
        #expect(searches.limit == 100 && searches.used == 1 && searches.remaining == 99, "\(searches)")
        #expect(searches.endpoints.map { "\($0.endpoint) \($0.units)/\($0.calls)" } == ["search.list 1/1"])
        let circuit = try #require(snapshot.circuits.first)
        #expect(snapshot.circuits.count == 1)
        #expect(circuit.endpoint == "search.list")
        #expect(circuit.state == "open")
        #expect((300 - elapsed - 1...300).contains(circuit.retryInSeconds), "\(circuit.retryInSeconds) after \(elapsed) s")
        #expect(circuit.trips == 0, "a circuit opened by hand did not trip")
        #expect(snapshot.throttles.map { "\($0.endpoint) \($0.count)/\($0.limit) per \($0.windowSeconds)s, \($0.remaining) left" }
            == ["videos.list 2/30 per 60.0s, 28 left"])
        #expect(snapshot.recentLedgerEvents.map { "\($0.kind) \($0.endpoint) \($0.units)" }
            == ["charge search.list 1", "limit * 0", "charge videos.list 1", "charge videos.list 1", "limit * 0"])
        #expect(snapshot.recentCircuitTransitions.map { "\($0.endpoint) \($0.from)→\($0.to)" } == ["search.list closed→open"])

        // The same as the library's own snapshot of the file, times aside (JSON keeps whole seconds).
        var library = try await fixture.admin.store.dashboardSnapshot(at: Date())
        library.takenAt = snapshot.takenAt
        library.resetsAt = snapshot.resetsAt
        for index in library.recentLedgerEvents.indices { library.recentLedgerEvents[index].at = snapshot.recentLedgerEvents[index].at }
        for index in library.recentCircuitTransitions.indices {
            library.recentCircuitTransitions[index].at = snapshot.recentCircuitTransitions[index].at
        }
        for index in library.circuits.indices { library.circuits[index].retryInSeconds = snapshot.circuits[index].retryInSeconds }
        #expect(library == snapshot)
    }

    @Test("dashboard --once prints one plain frame with the numbers, within 80×24")
    func dashboardOnce() async throws {
        let fixture = try await DashboardFixture()
        let result = try fixture.admin.tollgate("dashboard", "--once")
        #expect(result.status == 0, "\(result.stderr)")
        let frame = result.stdout
        #expect(!frame.contains("\u{1B}"), "plain text when stdout is not a terminal")
        #expect(frame.contains("youtube"))
        #expect(frame.contains("2/10,000 · 9,998 left"))
        #expect(frame.contains("videos.list 2u/2"))
        #expect(frame.contains("1/100 · 99 left"))
        #expect(frame.contains("search.list 1u/1"))
        #expect(frame.contains("search.list            OPEN      0/5 retry in"))
        #expect(frame.contains("videos.list            2/30 per 60s"))
        #expect(frame.contains("charge    search.list +1"))
        let lines = frame.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count <= 24)
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(lines.filter { $0.count > 80 })")
    }

    @Test("dashboard in a real 80×24 terminal (tmux) follows another process's writes, and q quits and restores the terminal",
          .enabled(if: CommandRunner.isInstalled("tmux"), "tmux is not installed: .ci/run installs it"))
    func liveInTmux() async throws {
        let fixture = try AdminFixture()
        let tmux = try Tmux()
        defer { tmux.kill() }
        let api = try await FakeYouTubeAPI.start()
        try await withStopping(api, stop: { await $0.stop() }) { api in
            let tollgate = CommandRunner.tollgate.path
            // The shell prints how the dashboard exited and the terminal's mode afterwards, then waits.
            try tmux.start("""
                '\(tollgate)' dashboard --db '\(fixture.path)' --interval 0.2; echo "dashboard exited $?"; \
                stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)' | tr '\\n' ' '; echo; sleep 30
                """)

            let empty = try await tmux.waitForScreen { $0.contains { $0.contains("no buckets yet") } }
            #expect(empty.first?.hasPrefix("Tollgate · ") == true)

            // Another process writes to the file: tollgate get through the gate, against the fake API.
            let url = api.url("videos", ["id": "v1", "part": "snippet"]).absoluteString
            let path = fixture.path
            let get = try await offPool { try CommandRunner.tollgate("get", url, "--db", path) }
            #expect(get.status == 0, "\(get.stderr)")
            let updated = try await tmux.waitForScreen { $0.contains { $0.contains("1/10,000 · 9,999 left") } }
            #expect(updated.contains { $0.contains("videos.list 1u/1") })
            #expect(updated.contains { $0.contains("videos.list            1/30 per 60s") })
            #expect(updated.contains { $0.contains("charge    videos.list +1") })
            // The whole frame is on screen: nothing scrolled the title off the first row, no line
            // wrapped, and the footer is there.
            #expect(updated.count == 24)
            #expect(updated.first?.hasPrefix("Tollgate · ") == true, "\(updated.joined(separator: "\n"))")
            #expect(updated[1].hasPrefix("Quota day "), "\(updated.joined(separator: "\n"))")
            #expect(updated.contains { $0.hasPrefix("q or Ctrl-C quits") }, "\(updated.joined(separator: "\n"))")

            try tmux.sendKeys("q")
            let after = try await tmux.waitForScreen { $0.contains { $0.hasSuffix("icanon echo") || $0.hasSuffix("icanon -echo") } }
            #expect(after.contains("dashboard exited 0"))
            // Back on the normal screen, in canonical mode with echo, with no frame left behind.
            #expect(after.contains("icanon echo"))
            #expect(!after.contains { $0.contains("q or Ctrl-C quits") })
        }
    }
}

/// A private tmux server with one 80×24 session.
struct Tmux: Sendable {
    let socket = "tollgate-test-\(UUID().uuidString.prefix(8))"
    let session = "dashboard"

    init() throws {}

    @discardableResult
    func run(_ arguments: [String]) throws -> CommandResult {
        try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["tmux", "-L", socket] + arguments)
    }

    /// Starts the session. The tmux server it forks outlives the client, so it must not inherit
    /// any descriptor of this process: Foundation learns that a child exited when the last copy of
    /// a socket it gave the child closes, and a server holding one would hang every wait on that
    /// child. Bash closes every descriptor above 2 before it runs tmux; the output goes nowhere.
    func start(_ command: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [
            "-c", #"for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done 2>/dev/null; exec "$@""#,
            "tmux", "tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command,
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CurlFailure(message: "tmux new-session exited \(process.terminationStatus)")
        }
    }

    func sendKeys(_ keys: String) throws {
        try run(["send-keys", "-t", session, keys])
    }

    /// The pane's rows, trailing spaces removed.
    func screen() throws -> [String] {
        let result = try run(["capture-pane", "-p", "-t", session])
        return result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map { String($0).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
    }

    /// Polls the pane until `condition` holds, for at most five seconds, off the cooperative pool.
    func waitForScreen(_ condition: @escaping @Sendable ([String]) -> Bool) async throws -> [String] {
        try await offPool { try pollScreen(condition) }
    }

    private func pollScreen(_ condition: ([String]) -> Bool) throws -> [String] {
        let deadline = Date().addingTimeInterval(5)
        var last: [String] = []
        while Date() < deadline {
            last = try screen()
            if condition(last) { return last }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw CurlFailure(message: "the screen never matched; it shows:\n" + last.joined(separator: "\n"))
    }

    func kill() {
        _ = try? run(["kill-server"])
    }
}
