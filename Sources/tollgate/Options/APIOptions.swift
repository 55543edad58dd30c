import ArgumentParser
import Tollgate
import TollgateAPIDescription

/// `--api NAME_OR_FILE`: the API the gate follows, from a shipped description (`youtube-v3`, the
/// default) or a file of the operator's.
///
/// The file is read when a command asks for it, not while the arguments are parsed: a mistake in
/// it is one line, `tollgate: FILE:LINE:COLUMN: KEY: …`, and exit status 64, without the usage text
/// argument-parser would print after it.
struct APIOptions: ParsableArguments {
    @Option(
        name: .customLong("api"),
        help: ArgumentHelp(
            "An API description file, or a shipped one's name (\(APIDescription.shippedTexts.keys.sorted().joined(separator: ", "))). Default: youtube-v3.",
            valueName: "file-or-name"
        ),
        completion: .file(extensions: ["yaml", "yml"])
    )
    var nameOrPath: String?

    /// The description given with `--api`; nil without one.
    /// - Throws: `ExitCode` 64 after reporting the description's mistake.
    func chosen() throws -> APIDescription? {
        guard let nameOrPath else { return nil }
        return try Self.reporting { () throws(APIDescriptionError) in try APIDescription.named(nameOrPath) }
    }

    /// The description in force: the one given, else the YouTube Data API v3's.
    func inForce() throws -> APIDescription {
        if let chosen = try chosen() { return chosen }
        return try Self.reporting { () throws(APIDescriptionError) in try APIDescription.named("youtube-v3") }
    }

    /// The gate's rules for the API in force; the YouTube preset itself when none is given.
    func configuration() throws -> GateConfiguration {
        guard let chosen = try chosen() else { return .youTubeDataAPIv3 }
        return try Self.reporting { () throws(APIDescriptionError) in try chosen.gateConfiguration() }
    }

    /// How the API in force names requests.
    func naming() throws -> EndpointNaming {
        try chosen()?.naming ?? .youTubeDataAPIv3
    }

    /// Runs `body`; a description's mistake is reported on the one error path and becomes exit 64,
    /// whether a command's `validate()` or `run()` asked.
    private static func reporting<Value>(_ body: () throws(APIDescriptionError) -> Value) throws -> Value {
        do {
            return try body()
        } catch {
            CommandErrors.report(error)
            throw ExitCode(CommandErrors.usageStatus)
        }
    }
}
