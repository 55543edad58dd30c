import ArgumentParser
import Foundation
import Tollgate
import TollgateAPIDescription

/// `tollgate api check FILE` and `tollgate api show`: API description files.
struct APICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "Check or show an API description (routes, costs, buckets, throttles).",
        subcommands: [Check.self, Show.self],
        defaultSubcommand: Show.self
    )

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check an API description file: every key, value and reference, and what the gate can follow.",
            discussion: "Exit status: 0 valid, 64 with the file, line and key of the first problem."
        )

        @Argument(help: ArgumentHelp("The description file, or a shipped one's name.", valueName: "file-or-name"),
                  completion: .file(extensions: ["yaml", "yml"]))
        var file: String

        func run() async throws {
            let description: APIDescription
            do {
                description = try APIDescription.named(file)
                _ = try description.gateConfiguration()
            } catch {
                // One line with the file, line, column and key, exit 64: no usage text after it.
                CommandErrors.report(error)
                throw ExitCode(CommandErrors.usageStatus)
            }
            for line in description.deprecations {
                FileHandle.standardError.write(Data("warning: \(line)\n".utf8))
            }
            print("\(file): valid — \(description.name): \(description.buckets.count) bucket(s), "
                  + "\(description.routes.count) route(s), \(description.endpoints.count) endpoint(s)")
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the API description in force (youtube-v3 unless --api).")

        @OptionGroup var api: APIOptions

        func run() async throws {
            print(APIDescriptionRenderer.render(try api.inForce()).joined(separator: "\n"))
        }
    }
}
