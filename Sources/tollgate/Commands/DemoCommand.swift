import ArgumentParser
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Logging
import Tollgate
import TollgateFakeAPI

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Tell Tollgate's story against a fake YouTube API on loopback, in under a minute.",
        discussion: """
            Starts a fake, quota-charging YouTube-style API on 127.0.0.1 and runs a scripted workload \
            through the gate on a database file: a first fetch, repeated refreshes, a 429 storm, \
            recovery, a restart and quota exhaustion. Time is simulated, so the hour the circuit stays \
            open passes in an instant. Each chapter says what it cost and what it saved.
            """
    )

    static let defaultPath = "tollgate-demo.sqlite"

    @Option(name: .customLong("db"), help: ArgumentHelp("The database file the demo creates.", valueName: "path"))
    var path: String = DemoCommand.defaultPath

    @Flag(help: "Replace the file if it is a Tollgate database (the default demo file is always replaced); any other file is refused.")
    var replace = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if path != Self.defaultPath, !replace, FileManager.default.fileExists(atPath: path) {
            throw ValidationError("\(path) exists; the demo starts from an empty file. Pass --replace to overwrite it.")
        }
    }

    func run() async throws {
        // Only a Tollgate database (or an empty file) is replaced: never another application's
        // data, a text file or a device.
        try SQLiteStore.requireReplaceable(path: path)
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
        let quiet = logging.bootstrap()
        let api = try await FakeYouTubeAPI.start(logger: quiet)
        defer { Task { await api.stop() } }
        let now = Date()
        let clock = SimulatedClock(base: ManualClock(now: DemoStory.start(endingBy: now)))
        var story = try DemoStory(api: api, clock: clock, path: path, logger: quiet)
        try await story.tell(realNow: now)
        await api.stop()
    }
}

/// The demo's chapters, and the numbers each one prints.
struct DemoStory {
    struct ChapterResult {
        var title: String
        var requests = 0
        var sentToAPI = 0
        var unitsCharged = 0
        var unitsWithoutGate = 0
        var sources: [String: Int] = [:]

        /// Answers the cache gave (fresh, revalidated by a 304, coalesced) over every request
        /// that could be cached, nil when none was sent.
        var hitRate: Double? {
            let fromCache = ["cache", "fresh", "revalidated", "coalesced"].map { sources[$0] ?? 0 }.reduce(0, +)
            let cacheable = fromCache + (sources["network"] ?? 0)
            return cacheable == 0 ? nil : Double(fromCache) / Double(cacheable)
        }
    }

    let api: FakeYouTubeAPI
    let clock: SimulatedClock
    let path: String
    let logger: Logger
    var gate: Gate
    var results: [ChapterResult] = []
    let videoIDs = (1...20).map { "video\($0)" }

    init(api: FakeYouTubeAPI, clock: SimulatedClock, path: String, logger: Logger) throws {
        self.api = api
        self.clock = clock
        self.path = path
        self.logger = logger
        self.gate = try Self.makeGate(path: path, clock: clock, logger: logger)
    }

    /// How much simulated time the story takes, with room to spare (it takes 2 h 45 min: five-minute
    /// refreshes, half an hour of one-minute ones, the hour a rate-limited circuit stays open,
    /// throttle waits).
    static let span: TimeInterval = 3.25 * 3600

    /// When the story starts so that it ends by `now` on today's Pacific day: its events then lie in
    /// the past, and `tollgate dashboard --web` opened on the file right after draws them where they
    /// happened. Early in the Pacific day, when the story does not fit before now, it starts at
    /// midnight (and says so).
    /// - Parameter now: The wall clock's time.
    /// - Returns: The simulated clock's start.
    static func start(endingBy now: Date) -> Date {
        let midnight = PacificDay(containing: now).start
        return max(midnight, now.addingTimeInterval(-span))
    }

    static func makeGate(
        path: String, clock: SimulatedClock, logger: Logger, freshFor: ChosenFreshness? = nil
    ) throws -> Gate {
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.freshFor = freshFor
        configuration.maximumThrottleWait = .seconds(60)
        // Like YouTube, the fake API says must-revalidate on every answer: without this opt-in
        // (a departure from RFC 9111 §4.2.4) nothing stored could be served in the outage chapters.
        configuration.cache.servesStaleAgainstDirectives = true
        return try Gate(store: try SQLiteStore(path: path, logger: logger), transport: URLSessionTransport(),
                        configuration: configuration, clock: clock, logger: logger)
    }

    mutating func tell(realNow: Date) async throws {
        print("Tollgate demo — fake YouTube Data API v3 at \(api.baseURL), database \(path)")
        print("Simulated time starts at \(PacificDay.localTimeDescription(of: clock.now())), so the story ends before now "
            + "on today's quota day.\n")

        try await chapter("1. First fetch of a channel's videos") { story, result in
            try await story.fetch("channels", ["id": "UCdemo", "part": "contentDetails"], "channels.list", into: &result)
            try await story.fetch("playlistItems", ["playlistId": "UUdemo", "part": "snippet", "maxResults": "50"],
                                  "playlistItems.list", into: &result)
            try await story.refreshVideos(into: &result)
            return "every resource downloaded once and stored with its ETag"
        }
        try await chapter("2. Five refreshes, one video changed before each") { story, result in
            for round in 1...5 {
                story.api.modify(path: "/youtube/v3/videos", query: "id=video\(round)&part=snippet,statistics")
                try await story.refreshVideos(into: &result)
            }
            return "unchanged videos answer 304 Not Modified: the stored body is reused, but Google charges "
                + "every request at least 1 unit, a 304 too: on YouTube a revalidation saves bandwidth, not units"
        }
        try await chapter("2b. Five more refreshes, the app saying fresh_for: 10m") { story, result in
            // What saves units on YouTube is not asking: Google answers max-age=0, must-revalidate,
            // and the app says a video 10 minutes old is good enough.
            story.gate = try Self.makeGate(path: story.path, clock: story.clock, logger: story.logger,
                                           freshFor: ChosenFreshness(.seconds(600)))
            for round in 1...5 {
                story.api.modify(path: "/youtube/v3/videos", query: "id=video\(round + 5)&part=snippet,statistics")
                try await story.refreshVideos(into: &result)
            }
            try await story.gate.flush()
            story.gate = try Self.makeGate(path: story.path, clock: story.clock, logger: story.logger)
            return "every other refresh was answered without asking (fresh, with its Age): those units were saved; "
                + "a video changed meanwhile is seen up to 10 minutes late, the app's choice"
        }
        try await chapter("2c. Every minute for half an hour with 1,000 units left, fresh_for: {min: 1m, max: 1h, follow_budget: true}") { story, result in
            // A busier app on a tighter day: at 1 minute, 20 units a minute would spend the 1,000
            // units in under an hour. The freshness follows the budget instead of a fixed guess.
            let bucket = story.gate.quota.price(of: "videos.list").bucket
            let used = try await story.gate.quota.status(bucket: bucket).unitsUsed
            _ = try await story.gate.quota.setLimit(bucket: bucket, limit: used + 1_000)
            let following = ChosenFreshness(minimum: .seconds(60), maximum: .seconds(3600), followsBudget: true)
            story.gate = try Self.makeGate(path: story.path, clock: story.clock, logger: story.logger, freshFor: following)
            var lifetimes: [(at: Date, seconds: Int64, reason: BudgetFreshness.Reason)] = []
            for minute in 1...30 {
                if minute % 5 == 0 {
                    story.api.modify(path: "/youtube/v3/videos", query: "id=video\(minute / 5 + 10)&part=snippet,statistics")
                }
                try await story.refreshVideos(after: .seconds(60), into: &result)
                let decision = await story.gate.freshnessInForce(following, endpoint: "videos.list")
                if lifetimes.last?.seconds != decision.lifetime.components.seconds {
                    lifetimes.append((story.clock.now(), decision.lifetime.components.seconds, decision.reason))
                }
            }
            try await story.gate.flush()
            let left = try await story.gate.quota.status(bucket: bucket).remaining
            _ = try await story.gate.quota.setLimit(bucket: bucket, limit: nil)
            story.gate = try Self.makeGate(path: story.path, clock: story.clock, logger: story.logger)
            let chosen = lifetimes.map {
                "\(Self.time($0.at)) \(Self.duration(TimeInterval($0.seconds))) (\($0.reason.rawValue.replacingOccurrences(of: "_", with: " ")))"
            }.joined(separator: ", ")
            return "the freshness in force, decided every 10 minutes from the last 10 minutes' spending: \(chosen); "
                + "\(left) of the 1,000 units were left, where asking every minute would have spent 600"
        }
        try await chapter("3. A 429 storm") { story, result in
            story.api.updateBehaviour { $0.rateLimitStorm = .init() }
            let sleepsBefore = story.clock.sleeps.count
            try await story.refreshVideos(into: &result)
            let backoff = story.clock.sleeps.dropFirst(sleepsBefore).map { String(format: "%.1fs", $0.timeInterval) }
            let remaining = try await story.gate.circuit.timeRemaining(for: "videos.list") ?? 0
            return "backed off \(backoff.joined(separator: ", ")); 5 rate limits in a row opened the circuit for "
                + "\(Self.duration(remaining)); the API was then left alone and stored videos were served stale"
        }
        try await chapter("4. An hour later: recovery through half-open") { story, result in
            story.api.updateBehaviour { $0.rateLimitStorm = nil }
            story.clock.base.advance(by: .seconds(3601))
            try await story.refreshVideos(into: &result)
            let state = try await story.gate.circuit.state(for: "videos.list")
            return "one probe went through, succeeded, and the circuit is \(state) again"
        }
        try await chapter("5. A restart: a new process on the same file") { story, result in
            try await story.gate.flush()
            story.gate = try Self.makeGate(path: story.path, clock: story.clock, logger: story.logger)
            let used = try await story.gate.quota.usage().map(\.units).reduce(0, +)
            try await story.refreshVideos(into: &result)
            return "the new gate remembered \(used) units spent today, every ETag and the circuits"
        }
        try await chapter("6. Quota exhaustion") { story, result in
            var query = 0
            while true {
                query += 1
                do {
                    try await story.fetch("search", ["q": "swift \(query)", "part": "snippet"], "search.list", into: &result)
                } catch TollgateError.quotaExceeded {
                    break
                }
            }
            try await story.fetch("search", ["q": "swift 1", "part": "snippet"], "search.list", into: &result)
            var refusal = ""
            do {
                try await story.fetch("search", ["q": "kotlin", "part": "snippet"], "search.list", into: &result)
            } catch let error as TollgateError {
                refusal = error.description
            }
            let price = story.gate.quota.price(of: "search.list")
            let limit = story.gate.configuration.quota.bucketLimits[price.bucket] ?? 0
            return "search.list has a bucket of its own (\(price.bucket): \(limit) calls a day, \(Self.units(price.units)) each): "
                + "the ledger refused the \(Self.ordinal(query)) search before it was sent; "
                + "a search made earlier was served stale; a new one got: \(refusal)"
        }
        try await gate.flush()
        printSummary()
        if clock.now() > realNow {
            print("\nIt is early in the Pacific day: the story, which began at midnight, runs "
                + "\(Self.duration(clock.now().timeIntervalSince(realNow))) past now.")
        } else {
            print("\nSimulated time ended at \(PacificDay.localTimeDescription(of: clock.now())), before now: "
                + "tollgate dashboard --web 127.0.0.1:9464 --db \(path) draws the story where it happened.")
        }
    }

    // MARK: Requests

    /// Refreshes every video, five minutes after the previous refresh unless told otherwise (so
    /// the 30-a-minute throttle window has emptied, as it would for an app that refreshes every few minutes).
    private mutating func refreshVideos(after interval: Duration = .seconds(300), into result: inout ChapterResult) async throws {
        clock.base.advance(by: interval)
        for id in videoIDs {
            try await fetch("videos", ["id": id, "part": "snippet,statistics"], "videos.list", into: &result)
        }
    }

    /// Sends one GET through the gate and counts it; refusals other than quota are counted and swallowed.
    private func fetch(_ resource: String, _ query: KeyValuePairs<String, String>, _ endpoint: String,
                       into result: inout ChapterResult) async throws {
        result.requests += 1
        result.unitsWithoutGate += gate.quota.price(of: endpoint).units
        do {
            let answer = try await gate.send(HTTPRequest(url: api.url(resource, query)), endpoint: endpoint)
            result.sources[answer.source.description, default: 0] += 1
        } catch let refusal as TollgateError {
            result.sources["refused (\(refusal.kind))", default: 0] += 1
            if case .quotaExceeded = refusal { throw refusal }
        }
    }

    // MARK: Printing

    private mutating func chapter(
        _ title: String, _ body: (inout DemoStory, inout ChapterResult) async throws -> String
    ) async throws {
        print(title)
        let sentBefore = api.receivedRequests.count
        let unitsBefore = try await gate.quota.usage().map(\.units).reduce(0, +)
        var result = ChapterResult(title: title)
        let moral = try await body(&self, &result)
        result.sentToAPI = api.receivedRequests.count - sentBefore
        result.unitsCharged = try await gate.quota.usage().map(\.units).reduce(0, +) - unitsBefore
        let sources = result.sources.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        print("   \(result.requests) requests → \(result.sentToAPI) reached the API · \(Self.units(result.unitsCharged)) charged"
            + " (\(Self.units(result.unitsWithoutGate)) without the gate)")
        print("   answers: \(sources)")
        if let rate = result.hitRate, rate > 0 {
            print("   cache hit rate \(Self.percent(rate)) (answered from the cache or by a 304; the goal: over 90 %)")
        }
        print("   \(moral)\n")
        results.append(result)
    }

    private func printSummary() {
        print("Summary")
        let header = ["chapter", "requests", "sent", "units", "without gate", "saved", "hit rate"]
        var rows = results.map { result in
            [String(result.title.prefix(44)), "\(result.requests)", "\(result.sentToAPI)", "\(result.unitsCharged)",
             "\(result.unitsWithoutGate)", Self.percent(saved: result.unitsWithoutGate - result.unitsCharged, of: result.unitsWithoutGate),
             result.hitRate.map(Self.percent) ?? "–"]
        }
        let total = results.reduce(into: ChapterResult(title: "total")) {
            $0.requests += $1.requests; $0.sentToAPI += $1.sentToAPI
            $0.unitsCharged += $1.unitsCharged; $0.unitsWithoutGate += $1.unitsWithoutGate
            $0.sources.merge($1.sources, uniquingKeysWith: +)
        }
        rows.append(["total", "\(total.requests)", "\(total.sentToAPI)", "\(total.unitsCharged)", "\(total.unitsWithoutGate)",
                     Self.percent(saved: total.unitsWithoutGate - total.unitsCharged, of: total.unitsWithoutGate),
                     total.hitRate.map(Self.percent) ?? "–"])
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        for (index, row) in ([header] + rows).enumerated() {
            let cells = row.enumerated().map { column, cell in
                column == 0 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }
            print("   " + cells.joined(separator: "  "))
            if index == 0 { print("   " + widths.map { String(repeating: "─", count: $0) }.joined(separator: "  ")) }
        }
        print("\nLook inside:")
        print("   sqlite3 -header -column \(path) 'SELECT * FROM quota_daily'")
        print("   sqlite3 -header -column \(path) 'SELECT * FROM cache_stats'")
        print("   sqlite3 -header -column \(path) 'SELECT endpoint, from_state, to_state, reason FROM circuit_transitions'")
        print("   swift run tollgate status --db \(path)")
    }

    /// `10:42` (Pacific), from `2026-11-27 10:42 PST`.
    private static func time(_ date: Date) -> String {
        String(PacificDay.localTimeDescription(of: date).split(separator: " ").dropFirst().first ?? "")
    }

    private static func units(_ count: Int) -> String {
        count == 1 ? "1 unit" : "\(count) units"
    }

    private static func percent(saved: Int, of total: Int) -> String {
        total == 0 ? "–" : String(format: "%.0f%%", Double(saved) / Double(total) * 100)
    }

    private static func percent(_ rate: Double) -> String {
        String(format: "%.0f %%", rate * 100)
    }

    /// A duration in the largest whole unit that fits, to the nearest minute past a minute:
    /// `45 s`, `5 min`, `1 h`, `1 h 30 min`.
    static func duration(_ seconds: TimeInterval) -> String {
        guard seconds >= 60 else { return "\(Int(seconds.rounded())) s" }
        let minutes = Int((seconds / 60).rounded())
        switch (minutes / 60, minutes % 60) {
        case (0, let minutes): return "\(minutes) min"
        case (let hours, 0): return "\(hours) h"
        case (let hours, let minutes): return "\(hours) h \(minutes) min"
        }
    }

    /// `1st`, `2nd`, `3rd`, `4th`, `11th`, `101st`.
    static func ordinal(_ number: Int) -> String {
        let suffix = switch (number % 10, number % 100) {
        case (_, 11...13): "th"
        case (1, _): "st"
        case (2, _): "nd"
        case (3, _): "rd"
        default: "th"
        }
        return "\(number)\(suffix)"
    }
}

extension TollgateError {
    /// A short name for tallies.
    var kind: String {
        switch self {
        case .circuitOpen: "circuit open"
        case .throttled: "throttled"
        case .quotaExceeded: "quota exceeded"
        }
    }
}
