import ArgumentParser
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Tollgate

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Send one GET through the gate, like curl: body to stdout, source and quota to stderr.",
        discussion: """
            Exit status: 0 answered (any HTTP status), 3 throttled, 4 circuit open, 5 quota exceeded, \
            6 network failure with nothing stored, 1 other errors (such as a database that cannot be \
            written), 64 a usage error.
            """
    )

    static let throttledExitCode: Int32 = 3
    static let circuitOpenExitCode: Int32 = 4
    static let quotaExceededExitCode: Int32 = 5
    static let networkExitCode: Int32 = 6

    @Argument(help: "The URL to fetch.")
    var url: String

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The endpoint's name in the cost table. Default: from the URL (YouTube v3 names, else 'GET /path').")
    var endpoint: String?

    @Option(help: "Units to charge instead of the cost table's price.")
    var cost: Int?

    @Option(name: [.customShort("H"), .long], help: ArgumentHelp("A request header, 'Name: value'. Repeatable.", valueName: "header"))
    var header: [String] = []

    @Flag(help: "Print the response's status and headers to stderr too.")
    var include = false

    func validate() throws {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
              parsed.host != nil else {
            throw ValidationError("'\(url)' is not an http(s) URL.")
        }
        if let cost, cost < 0 { throw ValidationError("--cost must not be negative.") }
        if let cost, cost > QuotaLimits.maximumUnits {
            throw ValidationError("--cost must be at most \(DashboardRenderer.grouped(QuotaLimits.maximumUnits)) units, not \(cost).")
        }
        if let endpoint { try AdminArguments.endpoint(endpoint, label: "--endpoint") }
        for field in header where Self.parseHeader(field) == nil {
            throw ValidationError("--header '\(field)' is not 'Name: value'.")
        }
    }

    func run() async throws {
        // A store that cannot be opened or written (read-only, full, locked) is one clear line, exit 1.
        try await reportingErrors { try await send() }
    }

    private func send() async throws {
        let path = try database.preparedPath()
        var request = HTTPRequest(url: URL(string: url)!)
        for field in header {
            if let (name, value) = Self.parseHeader(field) { request.headerFields.append(HTTPField(name: name, value: value)) }
        }
        let endpoint = endpoint ?? EndpointNaming.youTubeDataAPIv3.endpoint(for: request)
        let gate = try Gate(store: try SQLiteStore(path: path))
        do {
            let answer = try await gate.send(request, endpoint: endpoint, options: GateRequestOptions(cost: cost))
            try await gate.flush()
            FileHandle.standardOutput.write(answer.body)
            if include {
                printError("HTTP \(answer.status.code) \(answer.status.reasonPhrase)")
                for field in answer.response.headerFields { printError("\(field.name): \(field.value)") }
            }
            let price = gate.quota.price(of: endpoint)
            let left = try await gate.quota.remaining(bucket: price.bucket)
            printError("tollgate: \(endpoint) · status \(answer.status.code) · source \(answer.source) · "
                + "units charged \(answer.unitsCharged) · \(left) units left today in \(price.bucket)")
        } catch let refusal as TollgateError {
            try? await gate.flush()
            printError("tollgate: \(endpoint): \(refusal)")
            switch refusal {
            case .throttled: throw ExitCode(Self.throttledExitCode)
            case .circuitOpen: throw ExitCode(Self.circuitOpenExitCode)
            case .quotaExceeded: throw ExitCode(Self.quotaExceededExitCode)
            }
        } catch let failure as HTTPTransportError {
            try? await gate.flush()
            printError("tollgate: \(endpoint): \(failure)")
            throw ExitCode(Self.networkExitCode)
        }
    }

    static func parseHeader(_ text: String) -> (HTTPField.Name, String)? {
        guard let colon = text.firstIndex(of: ":"),
              let name = HTTPField.Name(text[..<colon].trimmingCharacters(in: .whitespaces)) else { return nil }
        return (name, text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
}
