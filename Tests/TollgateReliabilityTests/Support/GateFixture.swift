import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Logging
import Tollgate
import TollgateAsyncHTTPClient
import TollgateFakeAPI
import TollgateTestSupport

/// A gate over a file, in front of the fake API on loopback, with a manual clock and every log line
/// captured at trace level.
struct GateFixture {
    static let start = utc("2027-03-10T18:00:00Z")
    let directory: TemporaryDirectory
    let path: String
    let store: SQLiteStore
    let api: FakeYouTubeAPI
    /// The wall clock; sleeps (retry backoff) pass at once and move it forward.
    let clock: SimulatedClock
    let logs = LogCapture()
    let gate: Gate

    init(
        behaviour: FakeAPIBehaviour = FakeAPIBehaviour(),
        storeConfiguration: @escaping (String) throws -> SQLiteStore.Configuration = { _ in .init() },
        configure: (inout GateConfiguration) -> Void = { _ in },
        transport: any HTTPTransport = AsyncHTTPClientTransport(timeout: .seconds(20))
    ) async throws {
        directory = try TemporaryDirectory()
        path = directory.path("gate.sqlite")
        _ = try SQLiteStore(path: path, logger: logs.logger)
        store = try SQLiteStore(path: path, configuration: try storeConfiguration(path), logger: logs.logger)
        api = try await FakeYouTubeAPI.start(behaviour: behaviour, logger: Logger(label: "fake-api") { _ in SwiftLogNoOpLogHandler() })
        clock = SimulatedClock(base: ManualClock(now: Self.start))
        gate = try Gate(store: store, transport: transport, configuration: Self.configuration(configure),
                        clock: clock, logger: logs.logger)
    }

    static func configuration(_ configure: (inout GateConfiguration) -> Void) -> GateConfiguration {
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: 100_000, per: .seconds(60)))
        configuration.retry.jitter = 0
        configuration.maximumThrottleWait = .zero
        configure(&configuration)
        return configuration
    }

    func video(_ id: String) -> HTTPRequest {
        HTTPRequest(url: api.url("videos", ["id": id, "part": "snippet"]))
    }

    func stop() async { await api.stop() }
}
