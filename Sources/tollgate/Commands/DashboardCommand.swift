import ArgumentParser
import Dispatch
import Foundation
import TollgateStore
#if canImport(Glibc)
import Glibc
#endif

struct DashboardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Live view of quota, circuits, throttles and the cache, refreshed every second.",
        discussion: "Press q or Ctrl-C to quit. When standard output is not a terminal, prints plain text frames."
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print one frame and exit.")
    var once = false

    @Option(help: "Seconds between refreshes.")
    var interval: Double = 1

    func validate() throws {
        guard interval >= 0.1, interval <= 3600 else {
            throw ValidationError("--interval must be between 0.1 and 3600 seconds.")
        }
    }

    func run() throws {
        try reportingStoreErrors {
            let path = try database.preparedPath()
            let store = try SQLiteStore(path: path)
            let interactive = TerminalSession.isInteractive && !once
            var renderer = DashboardRenderer(colours: interactive, databasePath: path)
            if !interactive {
                print(renderer.render(try store.dashboardSnapshot(at: Date())).joined(separator: "\n"))
                return
            }
            try runInteractive(store: store, renderer: &renderer)
        }
    }

    private func runInteractive(store: SQLiteStore, renderer: inout DashboardRenderer) throws {
        let terminal = TerminalSession()
        // Ctrl-C must restore the terminal too: take SIGINT from the default handler.
        signal(SIGINT, SIG_IGN)
        let interrupted = DispatchSemaphore(value: 0)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { interrupted.signal() }
        source.resume()
        terminal.enter()
        defer {
            terminal.restore()
            source.cancel()
            signal(SIGINT, SIG_DFL)
        }
        while true {
            let size = TerminalSession.size
            renderer.width = size.width
            renderer.height = size.height
            terminal.draw(renderer.render(try store.dashboardSnapshot(at: Date())))
            let deadline = Date().addingTimeInterval(interval)
            while Date() < deadline {
                if interrupted.wait(timeout: .now()) == .success { return }
                if let key = terminal.readKey(timeout: min(0.1, deadline.timeIntervalSinceNow)),
                   key == UInt8(ascii: "q") || key == UInt8(ascii: "Q") || key == 3 {
                    return
                }
            }
        }
    }
}
