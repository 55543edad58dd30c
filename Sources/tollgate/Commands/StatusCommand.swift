import ArgumentParser
import Foundation
import TollgateCore
import TollgateSQLite

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print what the database holds now: quota, circuits, throttles, cache.",
        discussion: "--json prints the same snapshot as the dashboard as stable JSON, for scripts."
    )

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Option(help: "How many recent ledger events and circuit transitions to include.")
    var events: Int = 8

    @OptionGroup(title: "Freshness (shown when a description is given)") var api: APIOptions

    func validate() throws {
        guard (0...1000).contains(events) else { throw ValidationError("--events must be between 0 and 1000.") }
        _ = try api.chosen()
    }

    func run() async throws {
        let logger = logging.bootstrap()
        let opened = try await database.open(access: .readOnly, logger: logger)
        let snapshot = try await opened.closing {
            var snapshot = try await opened.store.dashboardSnapshot(at: Date(), recentEvents: events)
            // The freshness in force is the description's, read with the gate's rule from the ledger.
            if try api.chosen() != nil {
                let reading = try FreshnessReading.fromLedger(opened.store, configuration: try api.configuration(), logger: logger)
                snapshot.freshness = await reading()
            }
            return snapshot
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.dateEncodingStrategy = .iso8601
            print(String(decoding: try encoder.encode(snapshot), as: UTF8.self))
        } else {
            // Every row: status is for reading in full (the dashboard is the view that fits a screen).
            let renderer = DashboardRenderer(width: 100, height: .max, colours: false, databasePath: opened.name, showsEveryRow: true)
            print(renderer.render(snapshot).joined(separator: "\n"))
        }
    }
}
