import ArgumentParser
import Foundation
import Tollgate

/// `tollgate circuit`: the per-endpoint circuit breakers.
struct CircuitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "circuit",
        abstract: "Show and operate the per-endpoint circuit breakers.",
        discussion: "Every change is a row in circuit_transitions.",
        subcommands: [Show.self, Reset.self, Open.self],
        defaultSubcommand: Show.self
    )

    /// `tollgate circuit show`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Every circuit's state, or one endpoint's state with its latest transitions."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var logging: LoggingOptions

        @Argument(help: "One endpoint, such as videos.list.")
        var endpoint: String?

        @Option(help: "How many transitions to list for one endpoint.")
        var history = 10

        @Flag(help: "Print JSON instead of text.")
        var json = false

        /// One endpoint's circuit as `--json` prints it.
        struct Detail: Codable {
            struct Transition: Codable {
                var at: Date
                var from: String
                var to: String
                var reason: String
            }
            var endpoint: String
            var state: String
            var consecutiveFailures: Int
            var failureThreshold: Int
            var trips: Int
            var retryInSeconds: Int
            var transitions: [Transition]
        }

        func validate() throws {
            if let endpoint { try AdminArguments.endpoint(endpoint) }
            guard (0...1000).contains(history) else { throw ValidationError("--history must be between 0 and 1000.") }
        }

        func run() async throws {
            try await AdminServices.with(database, logging: logging, access: .readOnly) { services in
                guard let endpoint else {
                    let circuits = try await services.snapshot().circuits
                    if json { return try printJSON(circuits) }
                    if circuits.isEmpty { print("No circuits yet: no endpoint has failed.") }
                    for circuit in circuits { print(Self.line(circuit)) }
                    return
                }
                let now = Date()
                let record = try await services.circuit.record(for: endpoint)
                if json {
                    let transitions = try await services.circuit.history(endpoint: endpoint, limit: history)
                    return try printJSON(Detail(
                        endpoint: endpoint, state: record?.effectiveState(at: now).rawValue ?? "closed",
                        consecutiveFailures: record?.consecutiveFailures ?? 0,
                        failureThreshold: record?.failureThreshold ?? 0, trips: record?.trips ?? 0,
                        retryInSeconds: Int((record?.remainingOpenTime(at: now) ?? 0).rounded(.up)),
                        transitions: transitions.map { .init(at: $0.at, from: $0.from.rawValue, to: $0.to.rawValue, reason: $0.reason) }
                    ))
                }
                guard let record else {
                    print("\(endpoint): CLOSED (never failed)")
                    return
                }
                var text = "\(endpoint): \(record.effectiveState(at: now)) · failures "
                    + "\(record.consecutiveFailures)/\(record.failureThreshold) · trips \(record.trips)"
                if let remaining = record.remainingOpenTime(at: now) {
                    text += " · retry in \(Int(remaining.rounded(.up)))s"
                }
                print(text)
                for transition in try await services.circuit.history(endpoint: endpoint, limit: history) {
                    print("  \(PacificDay.localTimeDescription(of: transition.at))  \(transition.from) → \(transition.to): "
                        + transition.reason)
                }
            }
        }

        static func line(_ circuit: DashboardSnapshot.Circuit) -> String {
            let state = CircuitState(rawValue: circuit.state)?.description ?? circuit.state
            return "\(circuit.endpoint): \(state) · failures \(circuit.consecutiveFailures)/\(circuit.failureThreshold)"
                + " · trips \(circuit.trips)" + (circuit.state == "open" ? " · retry in \(circuit.retryInSeconds)s" : "")
        }
    }

    /// `tollgate circuit reset`.
    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Close one endpoint's circuit, or every circuit, and clear its failure counts."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var logging: LoggingOptions

        @OptionGroup var selection: EndpointSelection

        func run() async throws {
            try await AdminServices.with(database, logging: logging) { services in
                let transitions = try await services.circuit.reset(endpoint: selection.endpoint)
                if transitions.isEmpty {
                    print("\(selection.endpoint ?? "every circuit"): already closed with nothing counted; nothing to reset.")
                }
                for transition in transitions {
                    print("\(transition.endpoint): \(transition.from) → \(transition.to) (reset)")
                }
            }
        }
    }

    /// `tollgate circuit open`.
    struct Open: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "open",
            abstract: "Open an endpoint's circuit by hand: its requests are refused (or served stale) for a while."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var logging: LoggingOptions

        @Argument(help: "The endpoint, such as videos.list.")
        var endpoint: String

        @Option(name: .customLong("for"), help: ArgumentHelp("How long to keep it open.", valueName: "seconds"))
        var seconds: Int

        func validate() throws {
            try AdminArguments.endpoint(endpoint)
            guard seconds > 0 else { throw ValidationError("--for must be a positive number of seconds, not \(seconds).") }
            guard seconds <= 7 * 86_400 else { throw ValidationError("--for must be at most 604800 seconds (7 days).") }
        }

        func run() async throws {
            try await AdminServices.with(database, logging: logging) { services in
                try await services.circuit.forceOpen(endpoint: endpoint, for: .seconds(seconds))
                let until = Date().addingTimeInterval(TimeInterval(seconds))
                print("\(endpoint): OPEN for \(seconds)s, until \(PacificDay.localTimeDescription(of: until))")
            }
        }
    }
}
