import ArgumentParser
import Dispatch
import Foundation
import Tollgate
import TollgateCore
import TollgateSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Live view of quota, circuits, throttles and the cache, refreshed every second.",
        discussion: "Press q or Ctrl-C to quit. When standard output is not a terminal, prints plain text frames."
    )

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Print one frame and exit.")
    var once = false

    @Option(help: "Seconds between refreshes.")
    var interval: Double = 1

    @Option(help: ArgumentHelp(
        "Serve the web dashboard (with charts, /metrics and /api/snapshot) on HOST:PORT instead of drawing in the terminal.",
        valueName: "host:port"
    ))
    var web: String?

    @OptionGroup var adminToken: AdminTokenOption

    @OptionGroup(title: "Freshness (shown when a description is given)") var api: APIOptions

    func validate() throws {
        if let web { try adminToken.validate(address: web, option: "--web") }
        _ = try api.chosen()
        guard interval >= 0.1, interval <= 3600 else {
            throw ValidationError("--interval must be between 0.1 and 3600 seconds.")
        }
    }

    func run() async throws {
        if let web {
            try await AdminListener.serveAlone(web, token: adminToken.resolved(), database: database,
                                               api: try api.chosen().map { _ in try api.configuration() }, logging: logging)
            return
        }
        let logger = logging.bootstrap()
        let opened = try await database.open(access: .readOnly, logger: logger)
        let interactive = TerminalSession.isInteractive && !once
        var renderer = DashboardRenderer(colours: interactive, databasePath: opened.name)
        try await opened.closing {
            let freshness = try api.chosen().map { _ in
                try FreshnessReading.fromLedger(opened.store, configuration: try api.configuration(), logger: logger)
            }
            if interactive {
                try await runInteractive(opened, freshness: freshness, renderer: &renderer)
            } else {
                print(renderer.render(try await Self.snapshot(of: opened.store, freshness: freshness)).joined(separator: "\n"))
            }
        }
    }

    private static func snapshot(
        of store: any CommandStorage, freshness: (@Sendable () async -> [FreshnessInForce])?
    ) async throws -> DashboardSnapshot {
        var snapshot = try await store.dashboardSnapshot(at: Date(), recentEvents: DashboardRenderer.recentEvents)
        snapshot.freshness = await freshness?()
        return snapshot
    }

    private func runInteractive(
        _ database: OpenedDatabase, freshness: (@Sendable () async -> [FreshnessInForce])?, renderer: inout DashboardRenderer
    ) async throws {
        let store = database.store
        // A circuit that changes anywhere in a fleet is drawn at once; the interval's poll is the fallback.
        let changes = ChangeSignal()
        let watching = database.watchCircuitChanges.map { watch in Task { try? await watch { changes.raise() } } }
        defer { watching?.cancel() }
        let terminal = TerminalSession()
        // Ctrl-C, a kill and a closed terminal must restore the terminal too: take those signals
        // from their default handlers and end the loop instead.
        let stopSignals = [SIGINT, SIGTERM, SIGHUP]
        let stopped = DispatchSemaphore(value: 0)
        let sources = stopSignals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stopped.signal() }
            source.resume()
            return source
        }
        terminal.enter()
        defer {
            terminal.restore()
            for source in sources { source.cancel() }
            for number in stopSignals { signal(number, SIG_DFL) }
        }
        while true {
            let size = TerminalSession.size
            renderer.width = size.width
            renderer.height = size.height
            terminal.draw(renderer.render(try await Self.snapshot(of: store, freshness: freshness)))
            let deadline = Date().addingTimeInterval(interval)
            while Date() < deadline, !changes.take() {
                if stopped.wait(timeout: .now()) == .success { return }
                switch await TerminalSession.waitForKey(timeout: min(0.1, deadline.timeIntervalSinceNow)) {
                case .key(let key) where key == UInt8(ascii: "q") || key == UInt8(ascii: "Q") || key == 3:
                    return
                case .closed:
                    return
                case .key, .none:
                    continue
                }
            }
        }
    }
}
