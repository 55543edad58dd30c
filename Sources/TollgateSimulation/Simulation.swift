import Foundation
import HTTPTypes
import Logging
import Tollgate

/// Replays a recording through a real gate for one API description: the same gate code as
/// `tollgate proxy`, on a store of its own and a simulated clock moved to each request's recorded
/// start, with the recording as the upstream.
///
/// ```swift
/// let exchanges = try HTTPArchive.exchanges(inFile: "day.har")
/// let result = try await Simulation(api: "youtube-v3", configuration: configuration, naming: naming)
///     .run(exchanges, storeAt: directory.appending(path: "youtube.sqlite"))
/// ```
public struct Simulation: Sendable {
    /// The header that tells the replayed users apart with `scale` above 1: a credential, so each
    /// user has a cache of their own, as each installation of an app does, while every user
    /// spends the one API key's quota.
    public static let userField = HTTPField.Name("X-Tollgate-Simulated-User")!

    /// The description's name, for the report.
    public var api: String
    /// The gate's rules.
    public var configuration: GateConfiguration
    /// How requests are named.
    public var naming: EndpointNaming
    /// How many users replay the recording: copies spread across its first minute.
    public var scale: Int

    /// A simulation.
    /// - Parameters:
    ///   - api: The description's name.
    ///   - configuration: The gate's rules.
    ///   - naming: How requests are named.
    ///   - scale: How many users replay the recording; 1 by default.
    public init(api: String, configuration: GateConfiguration, naming: EndpointNaming, scale: Int = 1) {
        self.api = api
        self.configuration = configuration
        self.naming = naming
        self.scale = max(1, scale)
    }

    /// Replays `exchanges` and reports.
    /// - Parameters:
    ///   - exchanges: The recording, sorted by start time.
    ///   - path: Where the replay's own SQLite file goes (never the user's ledger).
    ///   - logger: Where the gate logs; nothing by default.
    /// - Returns: The result.
    /// - Throws: A configuration or store error.
    public func run(
        _ exchanges: [RecordedExchange], storeAt path: String,
        logger: Logger = Logger(label: "tollgate.simulate", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> SimulationResult {
        let start = exchanges.first?.startedAt ?? Date(timeIntervalSince1970: 0)
        let clock = SimulatedClock(base: ManualClock(now: start))
        let upstream = RecordedUpstream(exchanges, clock: clock)
        var configuration = configuration
        configuration.cache.sensitiveHeaders.insert(Self.userField)
        // What the recorded answers announce (X-RateLimit-Remaining, x-ratelimit-remaining-tokens)
        // counts the recorded traffic, which went without this gate: followed, it would charge the
        // replay for every request the gate saved.
        configuration.quota.announcedLimits = [:]
        let store = try SQLiteStore(path: path, logger: logger)
        let gate = try Gate(storage: store, transport: upstream, configuration: configuration, clock: clock, logger: logger)
        var tally = Tally(configuration: configuration)
        for (user, exchange) in Self.schedule(exchanges, users: scale) {
            if exchange.startedAt > clock.now() { clock.base.set(to: exchange.startedAt) }
            var request = exchange.request
            if scale > 1 { request.headerFields[Self.userField] = String(user) }
            let endpoint = naming.endpoint(for: request)
            do {
                // As `tollgate proxy` sends it: a client's own conditional is answered from what is stored.
                let answer = try await gate.sendReportingCost(request, body: exchange.requestBody, endpoint: endpoint,
                                                              options: GateRequestOptions(answersConditionalsFromStore: true))
                tally.count(answer, endpoint: endpoint)
            } catch {
                tally.count(error, endpoint: endpoint, at: clock.now())
            }
        }
        try await gate.flush()
        return try await tally.result(api: api, gate: gate, store: store, upstream: upstream)
    }

    /// The recording once per user, each copy `60 / users` seconds after the one before, in time order.
    static func schedule(_ exchanges: [RecordedExchange], users: Int) -> [(Int, RecordedExchange)] {
        guard users > 1 else { return exchanges.map { (0, $0) } }
        var copies: [(Int, RecordedExchange)] = []
        copies.reserveCapacity(exchanges.count * users)
        for user in 0..<users {
            let offset = 60.0 * Double(user) / Double(users)
            for var exchange in exchanges {
                exchange.startedAt = exchange.startedAt.addingTimeInterval(offset)
                copies.append((user, exchange))
            }
        }
        return copies.sorted { $0.1.startedAt < $1.1.startedAt }
    }
}
