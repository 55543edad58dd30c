import ArgumentParser
import Foundation
import Tollgate
import TollgateAPIDescription
import TollgateSimulation

/// `tollgate simulate --api A [--api B …] --har FILE`: what a recorded day of traffic would cost
/// under each description, side by side, before it meets the real quota.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Replay recorded traffic (a HAR file) through the gate under each description, and report what it would cost.",
        discussion: """
            Every request of the HAR file (Safari, Chrome, Firefox, Proxyman, Charles, mitmproxy, or \
            `tollgate proxy --record`) goes through a real gate per --api, on a store of its own in a \
            temporary directory that is removed afterwards (never your ledger), with the clock at each \
            request's recorded start and the recording as the upstream. The report: requests, sent \
            upstream, units per bucket against the limit, when a bucket would run out, refusals by kind \
            and endpoint, stale answers, hit rate, units saved and by what, the top endpoints.
            """
    )

    @Option(name: .customLong("api"), help: ArgumentHelp("A description file or shipped name; repeat to compare.",
                                                         valueName: "file-or-name"))
    var apis: [String]

    @Option(help: ArgumentHelp("The HAR 1.2 file to replay.", valueName: "file"))
    var har: String

    @Option(help: "Replay this many users: copies of the recording spread across its first minute, each with a cache of its own.")
    var scale: Int = 1

    @Flag(help: "Print JSON: {\"results\": [one per --api, in order]}.")
    var json = false

    func validate() throws {
        guard (1...10_000).contains(scale) else { throw ValidationError("--scale must be 1 to 10000.") }
    }

    func run() async throws {
        let exchanges: [RecordedExchange]
        do {
            let recording = try HTTPArchive.recording(inFile: har)
            exchanges = recording.exchanges
            if recording.cutShort {
                FileHandle.standardError.write(Data(
                    "\(har): the recording has no end (its proxy did not stop cleanly, or is still recording): its \(exchanges.count) whole entries are replayed\n".utf8))
            }
        } catch {
            CommandErrors.report(error)
            throw ExitCode(CommandErrors.usageStatus)
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "tollgate-simulate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var results: [SimulationResult] = []
        for (index, api) in apis.enumerated() {
            let options = try APIOptions.parse(["--api", api])
            let description = try options.inForce()
            let simulation = Simulation(api: api, configuration: try options.configuration(), naming: description.naming,
                                        scale: scale)
            results.append(try await simulation.run(exchanges, storeAt: directory.appending(path: "\(index).sqlite").path))
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.dateEncodingStrategy = .iso8601
            let text = String(decoding: try encoder.encode(["results": results]), as: UTF8.self)
            print(text)
        } else {
            print(SimulationReport.render(results, exchanges: exchanges.count, file: har).joined(separator: "\n"))
        }
    }
}
