import ArgumentParser
import Foundation
import Tollgate

/// `tollgate throttle`: the per-endpoint sliding windows.
struct ThrottleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "throttle",
        abstract: "Show and reset the per-endpoint throttle windows.",
        discussion: "A reset is recorded in admin_events.",
        subcommands: [Show.self, Reset.self],
        defaultSubcommand: Show.self
    )

    /// `tollgate throttle show`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Every endpoint's window: requests in it, its limit and what is left."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var logging: LoggingOptions

        @Flag(help: "Print JSON instead of text.")
        var json = false

        func run() async throws {
            try await AdminServices.with(database, logging: logging, access: .readOnly) { services in
                let throttles = try await services.snapshot().throttles
                if json { return try printJSON(throttles) }
                if throttles.isEmpty { print("No throttle windows yet: no request has been admitted.") }
                for throttle in throttles {
                    // The limits the file holds: those of the processes that use it, whatever this tool's preset says.
                    print("\(throttle.endpoint): \(throttle.count)/\(throttle.limit) in the last \(Int(throttle.windowSeconds))s"
                        + " · \(throttle.remaining) left")
                }
            }
        }
    }

    /// `tollgate throttle reset`.
    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Forget the requests recorded in one endpoint's window, or in every window."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var logging: LoggingOptions

        @OptionGroup var selection: EndpointSelection

        func run() async throws {
            try await AdminServices.with(database, logging: logging) { services in
                let forgotten = try await services.throttle.reset(endpoint: selection.endpoint)
                print("\(selection.endpoint ?? "every endpoint"): \(forgotten) recorded \(forgotten == 1 ? "request" : "requests") forgotten")
            }
        }
    }
}
