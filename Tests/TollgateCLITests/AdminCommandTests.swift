import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

/// A database file with services over it on the system clock, as the command-line tool uses.
struct AdminFixture {
    let directory: TemporaryDirectory
    let path: String
    let store: SQLiteStore
    let clock = SystemClock()

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.path("admin.sqlite")
        store = try SQLiteStore(path: path)
    }

    var ledger: QuotaLedger { get throws { try QuotaLedger(storage: store, configuration: .youTubeDataAPIv3, clock: clock) } }
    var breaker: CircuitBreaker { CircuitBreaker(storage: store, clock: clock) }
    var throttler: RequestThrottler { get throws { try RequestThrottler(storage: store, clock: clock) } }

    /// Runs `tollgate` with `--db` appended.
    func tollgate(_ arguments: String...) throws -> CommandResult {
        try CommandRunner.run(CommandRunner.tollgate, withDatabase(arguments))
    }

    /// `arguments` with `--db` added before any `--` (after which everything is positional).
    func withDatabase(_ arguments: [String]) -> [String] {
        var arguments = arguments
        arguments.insert(contentsOf: ["--db", path], at: arguments.firstIndex(of: "--") ?? arguments.endIndex)
        return arguments
    }

    func value(_ sql: String) throws -> String {
        try CommandRunner.sqliteValue(path, sql)
    }
}

@Suite("tollgate quota")
struct QuotaCommandTests {
    @Test("show says, per endpoint, how many calls carried batches and how many IDs they carried, as text and as JSON")
    func showBatches() async throws {
        let fixture = try AdminFixture()
        let ledger = try fixture.ledger
        try await ledger.reserve(endpoint: "videos.list")
        for ids in [49, 7] {
            var charge = try ledger.reservationRequest(endpoint: "videos.list")
            charge.detail = QuotaRules.batchDetail(ids: ids)
            _ = try await fixture.store.reserveQuota(charge)
        }
        var one = try ledger.reservationRequest(endpoint: "channels.list")
        one.detail = QuotaRules.batchDetail(ids: 3)
        _ = try await fixture.store.reserveQuota(one)
        try await ledger.reserve(endpoint: "playlists.list")

        let show = try fixture.tollgate("quota", "show")
        #expect(show.status == 0, "\(show.stderr)")
        let lines = show.stdout.split(separator: "\n").map(String.init)
        let videos = try #require(lines.first { $0.contains("videos.list") }, "\(show.stdout)")
        #expect(videos.hasSuffix("3 units  3 calls, 2 of them batches carrying 56 IDs"), "\(videos)")
        let channels = try #require(lines.first { $0.contains("channels.list") }, "\(show.stdout)")
        #expect(channels.hasSuffix("1 units  1 calls, 1 of them a batch carrying 3 IDs"), "\(channels)")
        let playlists = try #require(lines.first { $0.contains("playlists.list") }, "\(show.stdout)")
        #expect(!playlists.contains("batch"), "\(playlists)")

        let json = try fixture.tollgate("quota", "show", "--json")
        let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let bucket = try #require((report?["buckets"] as? [[String: Any]])?.first { $0["bucket"] as? String == "youtube" })
        let endpoints = try #require(bucket["endpoints"] as? [[String: Any]])
        func row(_ name: String) throws -> [String: Any] { try #require(endpoints.first { $0["endpoint"] as? String == name }) }
        #expect(try row("videos.list")["calls"] as? Int == 3)
        #expect(try row("videos.list")["batches"] as? Int == 2)
        #expect(try row("videos.list")["ids_carried"] as? Int == 56)
        #expect(try row("playlists.list")["batches"] as? Int == 0)
        #expect(try row("playlists.list")["ids_carried"] as? Int == 0)
    }

    @Test("show prints today's usage per bucket and endpoint, as text and as JSON")
    func show() async throws {
        let fixture = try AdminFixture()
        let ledger = try fixture.ledger
        for _ in 0..<3 { try await ledger.reserve(endpoint: "videos.list") }
        try await ledger.reserve(endpoint: "search.list")

        let text = try fixture.tollgate("quota", "show")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("youtube: 3/10,000 units used · 9,997 left · limit from configuration"))
        #expect(text.stdout.contains("youtube.search: 1/100 units used · 99 left · limit from configuration"))
        #expect(text.stdout.contains("search.list  1 units  1 calls"))
        #expect(text.stdout.contains("videos.list  3 units  3 calls"))

        let json = try fixture.tollgate("quota", "show", "--json")
        #expect(json.status == 0, "\(json.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let bucket = try #require((report?["buckets"] as? [[String: Any]])?.first)
        #expect(report?["pacific_date"] as? String == PacificDay(containing: Date()).key)
        #expect(bucket["bucket"] as? String == "youtube")
        #expect(bucket["used"] as? Int == 3)
        #expect(bucket["remaining"] as? Int == 9_997)
        #expect(bucket["limit_source"] as? String == "configuration")
        let endpoints = (bucket["endpoints"] as? [[String: Any]])?.map { "\($0["endpoint"] ?? "")=\($0["units"] ?? "")/\($0["calls"] ?? "")" }
        #expect(endpoints == ["videos.list=3/3"])
        let searches = try #require((report?["buckets"] as? [[String: Any]])?.first { $0["bucket"] as? String == "youtube.search" })
        #expect(searches["used"] as? Int == 1)
        #expect(searches["limit"] as? Int == 100)

        let yesterday = PacificDay(containing: Date()).previous.key
        let past = try fixture.tollgate("quota", "show", "--day", yesterday)
        #expect(past.status == 0)
        #expect(past.stdout.contains("youtube: 0/10,000 units used"))
    }

    @Test("set-limit changes quota_today's limit and leaves a limit event; --clear hands it back to the configuration")
    func setLimit() async throws {
        let fixture = try AdminFixture()
        try await fixture.ledger.reserve(endpoint: "videos.list")

        let set = try fixture.tollgate("quota", "set-limit", "youtube", "500")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("daily limit 500 (admin)"))
        #expect(try fixture.value("SELECT bucket_limit, bucket_remaining FROM quota_today WHERE endpoint = 'videos.list'") == "500|499")
        #expect(try fixture.value("SELECT detail FROM quota_events WHERE kind = 'limit' ORDER BY id DESC LIMIT 1")
            .hasSuffix("→ 500 (admin)"))

        let cleared = try fixture.tollgate("quota", "set-limit", "youtube", "--clear")
        #expect(cleared.status == 0, "\(cleared.stderr)")
        #expect(try fixture.value("SELECT bucket_limit FROM quota_today WHERE endpoint = 'videos.list'") == "10000")
        #expect(try fixture.value("SELECT detail FROM quota_events WHERE kind = 'limit' ORDER BY id DESC LIMIT 1")
            == "daily limit 500 (admin) → 10000 (configuration)")
    }

    @Test("reset gives today's units back with reset events; the totals still equal the events")
    func reset() async throws {
        let fixture = try AdminFixture()
        let ledger = try fixture.ledger
        for _ in 0..<4 { try await ledger.reserve(endpoint: "videos.list") }

        let reset = try fixture.tollgate("quota", "reset", "--bucket", "youtube")
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(reset.stdout.contains("4 units given back (videos.list 4)"))
        #expect(try fixture.value("SELECT units, bucket_remaining FROM quota_today") == "0|10000")
        #expect(try fixture.value("SELECT units FROM quota_events WHERE kind = 'reset'") == "-4")
        #expect(try fixture.value("SELECT SUM(units) FROM quota_events WHERE endpoint = 'videos.list'") == "0")
        #expect(try await ledger.discrepancies().isEmpty)
    }

    @Test("bad arguments exit non-zero with a clear message and change nothing",
          arguments: [
              (["quota", "set-limit", "youtube"], "Give the daily limit in units, or --clear"),
              (["quota", "set-limit", "youtube", "10", "--clear"], "Give a limit or --clear, not both"),
              (["quota", "set-limit", "youtube", "--", "-5"], "must be zero or more"),
              (["quota", "set-limit", "nosuch", "5"], "Unknown bucket 'nosuch'. Known buckets: youtube"),
              (["quota", "show", "--day", "2026-13-01"],
               "The value '2026-13-01' is invalid for '--day <YYYY-MM-DD>': not a Pacific date written YYYY-MM-DD"),
              (["quota", "reset", "--day", "yesterday"],
               "The value 'yesterday' is invalid for '--day <YYYY-MM-DD>': not a Pacific date written YYYY-MM-DD"),
              (["quota", "reset", "--bucket", "nosuch"], "Unknown bucket 'nosuch'"),
          ])
    func badArguments(arguments: [String], message: String) throws {
        let fixture = try AdminFixture()
        let result = try CommandRunner.run(CommandRunner.tollgate, fixture.withDatabase(arguments))
        #expect(result.status != 0)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(try fixture.value("SELECT COUNT(*) FROM quota_events") == "0")
    }
}

@Suite("tollgate circuit")
struct CircuitCommandTests {
    @Test("open, show and reset change circuit_status and each leaves a transition")
    func openShowReset() async throws {
        let fixture = try AdminFixture()
        try await fixture.breaker.recordResult(endpoint: "search.list", status: 503)

        let open = try fixture.tollgate("circuit", "open", "videos.list", "--for", "120")
        #expect(open.status == 0, "\(open.stderr)")
        #expect(open.stdout.contains("videos.list: OPEN for 120s"))
        let status = try fixture.value("SELECT state, retry_in_seconds > 100 AND retry_in_seconds <= 120 FROM circuit_status WHERE endpoint = 'videos.list'")
        #expect(status == "open|1")
        #expect(try fixture.value("SELECT from_state, to_state FROM circuit_transitions WHERE endpoint = 'videos.list'") == "closed|open")

        let all = try fixture.tollgate("circuit", "show")
        #expect(all.status == 0)
        #expect(all.stdout.contains("search.list: CLOSED · failures 1/5"))
        #expect(all.stdout.contains("videos.list: OPEN · failures 0/5 · trips 0 · retry in"))
        let one = try fixture.tollgate("circuit", "show", "videos.list")
        #expect(one.stdout.contains("videos.list: OPEN"))
        #expect(one.stdout.contains("CLOSED → OPEN"))

        let reset = try fixture.tollgate("circuit", "reset", "videos.list")
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(reset.stdout.contains("videos.list: OPEN → CLOSED (reset)"))
        #expect(try fixture.value("SELECT state FROM circuit_status WHERE endpoint = 'videos.list'") == "closed")
        #expect(try fixture.value("SELECT to_state FROM circuit_transitions WHERE endpoint = 'videos.list' ORDER BY id DESC LIMIT 1") == "closed")

        let everything = try fixture.tollgate("circuit", "reset", "--all")
        #expect(everything.status == 0)
        #expect(everything.stdout.contains("search.list: CLOSED → CLOSED (reset)"))
        #expect(try fixture.value("SELECT consecutive_failures FROM circuit_status WHERE endpoint = 'search.list'") == "0")
        #expect(try fixture.value("SELECT COUNT(*) FROM circuit_transitions") == "3")
    }

    @Test("bad arguments exit non-zero with a clear message and change nothing",
          arguments: [
              (["circuit", "reset"], "Name an endpoint, or pass --all"),
              (["circuit", "reset", "videos.list", "--all"], "Name an endpoint or pass --all, not both"),
              (["circuit", "open", "videos.list", "--for", "0"], "--for must be a positive number of seconds"),
              (["circuit", "open", "videos.list"], "Missing expected argument '--for <seconds>'"),
              (["circuit", "open", "", "--for", "5"], "the endpoint must not be empty"),
              (["circuit", "open", "videos.list", "--for", "999999999"], "--for must be at most 604800 seconds"),
          ])
    func badArguments(arguments: [String], message: String) throws {
        let fixture = try AdminFixture()
        let result = try CommandRunner.run(CommandRunner.tollgate, fixture.withDatabase(arguments))
        #expect(result.status != 0)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(try fixture.value("SELECT COUNT(*) FROM circuit_transitions") == "0")
    }
}

@Suite("tollgate throttle")
struct ThrottleCommandTests {
    @Test("show lists each window; reset empties it and is recorded in admin_events")
    func showAndReset() async throws {
        let fixture = try AdminFixture()
        let throttler = try fixture.throttler
        for _ in 0..<3 { _ = try await throttler.admit(endpoint: "videos.list") }
        _ = try await throttler.admit(endpoint: "search.list")

        let show = try fixture.tollgate("throttle", "show")
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("videos.list: 3/30 in the last 60s · 27 left"))
        #expect(show.stdout.contains("search.list: 1/30"))

        let reset = try fixture.tollgate("throttle", "reset", "videos.list")
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(reset.stdout.contains("videos.list: 3 recorded requests forgotten"))
        #expect(try fixture.value("SELECT current_count FROM throttle_status WHERE endpoint = 'videos.list'") == "0")
        #expect(try fixture.value("SELECT current_count FROM throttle_status WHERE endpoint = 'search.list'") == "1")
        #expect(try fixture.value("SELECT subject, target, action, detail FROM admin_events")
            == "throttle|videos.list|reset|forgot 3 recorded requests")

        let all = try fixture.tollgate("throttle", "reset", "--all")
        #expect(all.status == 0)
        #expect(try fixture.value("SELECT SUM(current_count) FROM throttle_status") == "0")
        #expect(try fixture.value("SELECT target IS NULL, detail FROM admin_events ORDER BY id DESC LIMIT 1")
            == "1|forgot 1 recorded request")
    }

    @Test("reset without an endpoint or --all is refused and records nothing")
    func badArguments() throws {
        let fixture = try AdminFixture()
        let result = try fixture.tollgate("throttle", "reset")
        #expect(result.status != 0)
        #expect(result.stderr.contains("Name an endpoint, or pass --all"))
        #expect(try fixture.value("SELECT COUNT(*) FROM admin_events") == "0")
    }
}

@Suite("tollgate cache")
struct CacheCommandTests {
    /// Fetches videos through a gate on `clock`, so the cache holds entries stored at that time.
    static func fetch(_ ids: [String], api: FakeYouTubeAPI, fixture: AdminFixture, clock: any TollgateClock) async throws {
        let gate = try Gate(store: fixture.store, transport: URLSessionTransport(), clock: clock)
        for id in ids {
            _ = try await gate.send(HTTPRequest(url: api.url("videos", ["id": id, "part": "snippet"])), endpoint: "videos.list")
        }
        try await gate.flush()
    }

    @Test("stats, prune, clear and vacuum: each shows in cache_stats or cache_entries, and each leaves an admin event")
    func maintenance() async throws {
        let fixture = try AdminFixture()
        var behaviour = FakeAPIBehaviour()
        behaviour.bodyPadding = 50_000
        let api = try await FakeYouTubeAPI.start(behaviour: behaviour)
        // Two videos now (one fetched twice: a 304), one stored eight days ago: past the 7-day limit.
        try await Self.fetch(["v1", "v2", "v1"], api: api, fixture: fixture, clock: fixture.clock)
        try await Self.fetch(["old"], api: api, fixture: fixture, clock: ManualClock(now: Date().addingTimeInterval(-8 * 86_400)))
        await api.stop()
        #expect(try fixture.value("SELECT COUNT(*) FROM cache_entries") == "3")

        let stats = try fixture.tollgate("cache", "stats")
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(stats.stdout.contains("3 entries stored"))
        #expect(stats.stdout.contains("videos.list  hit rate 33.3% · hits 0 · revalidated 1 · misses 2"))

        let prune = try fixture.tollgate("cache", "prune")
        #expect(prune.status == 0, "\(prune.stderr)")
        #expect(prune.stdout.contains("Pruned: 1 expired, 0 evicted"))
        #expect(try fixture.value("SELECT COUNT(*) FROM cache_entries") == "2")
        #expect(try fixture.value("SELECT subject, action, detail FROM admin_events")
            == "cache|prune|removed 1 expired and evicted 0 entries over the limits")

        let clear = try fixture.tollgate("cache", "clear", "--endpoint", "videos.list")
        #expect(clear.status == 0, "\(clear.stderr)")
        #expect(clear.stdout.contains("Cleared videos.list: 2 entries"))
        #expect(try fixture.value("SELECT COUNT(*) FROM cache_entries") == "0")
        #expect(try fixture.value("SELECT entries, body_bytes FROM cache_totals") == "0|0")
        #expect(try fixture.value("SELECT target, action FROM admin_events ORDER BY id DESC LIMIT 1") == "videos.list|clear")
        // The statistics describe what happened; clearing the cache keeps them.
        #expect(try fixture.value("SELECT misses, revalidations FROM cache_stats WHERE pacific_date = '\(PacificDay(containing: Date()).key)'") == "2|1")

        let pagesBefore = Int(try fixture.value("PRAGMA page_count")) ?? 0
        let vacuum = try fixture.tollgate("cache", "vacuum")
        #expect(vacuum.status == 0, "\(vacuum.stderr)")
        #expect(vacuum.stdout.contains("Vacuumed"))
        let pagesAfter = Int(try fixture.value("PRAGMA page_count")) ?? 0
        #expect(pagesAfter < pagesBefore, "\(pagesBefore) → \(pagesAfter)")
        #expect(try fixture.value("SELECT subject, action FROM admin_events ORDER BY id DESC LIMIT 1") == "database|vacuum")
        #expect(try fixture.value("PRAGMA integrity_check") == "ok")
        #expect(try fixture.value("SELECT COUNT(*) FROM admin_events") == "3")
    }

    @Test("bad arguments exit non-zero with a clear message",
          arguments: [
              (["cache", "stats", "--day", "12/01/2026"],
               "The value '12/01/2026' is invalid for '--day <YYYY-MM-DD>': not a Pacific date written YYYY-MM-DD"),
              (["cache", "clear", "--endpoint", " "], "--endpoint must not be empty"),
              (["cache", "explode"], "Unexpected argument 'explode'"),
          ])
    func badArguments(arguments: [String], message: String) throws {
        let fixture = try AdminFixture()
        let result = try CommandRunner.run(CommandRunner.tollgate, fixture.withDatabase(arguments))
        #expect(result.status != 0)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(try fixture.value("SELECT COUNT(*) FROM admin_events") == "0")
    }
}
