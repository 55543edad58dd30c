import ArgumentParser
import Tollgate
import TollgateAPIDescription

/// `--api NAME_OR_FILE`: the API the gate follows, from a shipped description (`youtube-v3`, the
/// default) or a file of the operator's.
struct APIOptions: ParsableArguments {
    @Option(
        name: .customLong("api"),
        help: ArgumentHelp(
            "An API description file, or a shipped one's name (\(APIDescription.shippedTexts.keys.sorted().joined(separator: ", "))). Default: youtube-v3.",
            valueName: "file-or-name"
        ),
        completion: .file(extensions: ["yaml", "yml"]),
        transform: { argument in
            do {
                return try APIDescription.named(argument)
            } catch let error as APIDescriptionError {
                throw ValidationError(error.description)
            }
        }
    )
    var chosen: APIDescription?

    /// The description in force: the one given, else the YouTube Data API v3's.
    func inForce() throws -> APIDescription {
        if let chosen { return chosen }
        return try APIDescription.named("youtube-v3")
    }

    /// The gate's rules for the API in force; the YouTube preset itself when none is given.
    func configuration() throws -> GateConfiguration {
        guard let chosen else { return .youTubeDataAPIv3 }
        do {
            return try chosen.gateConfiguration()
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// How the API in force names requests.
    var naming: EndpointNaming {
        chosen?.naming ?? .youTubeDataAPIv3
    }
}
