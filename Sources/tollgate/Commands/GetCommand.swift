import ArgumentParser
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Tollgate
import TollgateAsyncHTTPClient

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Send one GET through the gate, like curl: body to stdout, source and quota to stderr.",
        discussion: """
            Exit status: 0 answered (any HTTP status), 3 throttled, 4 circuit open, 5 quota exceeded, \
            6 network failure with nothing stored, 64 a request that cannot be sent, 1 other errors.
            """
    )

    static let throttledExitCode: Int32 = 3
    static let circuitOpenExitCode: Int32 = 4
    static let quotaExceededExitCode: Int32 = 5
    static let networkExitCode: Int32 = 6
    static let invalidRequestExitCode: Int32 = 64

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

    @Flag(name: [.customShort("L"), .long], help: """
        Follow redirects to other hosts too, without the request's credentials (headers and secret parameters).         Same-host redirects are always followed; without -L a redirect elsewhere is printed as it is.
        """)
    var location = false

    @OptionGroup var secrets: SecretOptions

    func validate() throws {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
              parsed.host != nil else {
            throw ValidationError("'\(url)' is not an http(s) URL.")
        }
        if let cost, cost < 0 { throw ValidationError("--cost must not be negative.") }
        for field in header where Self.parseHeader(field) == nil {
            throw ValidationError("--header '\(field)' is not 'Name: value'.")
        }
    }

    func run() async throws {
        let path = try database.preparedPath()
        var request = HTTPRequest(url: URL(string: url)!)
        for field in header {
            if let (name, value) = Self.parseHeader(field) { request.headerFields.append(HTTPField(name: name, value: value)) }
        }
        let endpoint = endpoint ?? EndpointNaming.youTubeDataAPIv3.endpoint(for: request)
        let gate: Gate
        do {
            // AsyncHTTPClient, like curl, sends the request as written and returns the bytes as sent.
            gate = try Gate(store: try SQLiteStore(path: path), transport: AsyncHTTPClientTransport(),
                            configuration: secrets.applied(to: .youTubeDataAPIv3))
        } catch let error as StoreError {
            printError("error: \(error)")
            throw ExitCode.failure
        }
        let options = GateRequestOptions(
            cost: cost, redirects: location ? .stripCredentialsAcrossOrigins : .sameOrigin, streamsLargeBodies: true
        )
        let answer: GateResponse
        do {
            answer = try await gate.sendReportingCost(request, endpoint: endpoint, options: options)
        } catch {
            try? await gate.flush()
            printError("tollgate: \(endpoint): \(error.error) · units charged \(error.unitsCharged)")
            throw ExitCode(Self.exitCode(for: error.error))
        }
        try await gate.flush()
        if let stream = answer.bodyStream {
            // Larger than the cache keeps: written as it arrives, never held whole.
            for try await chunk in stream { FileHandle.standardOutput.write(chunk) }
        } else {
            FileHandle.standardOutput.write(answer.body)
        }
        if include {
            printError("HTTP \(answer.status.code) \(answer.status.reasonPhrase)")
            for field in answer.response.headerFields { printError("\(field.name): \(field.value)") }
        }
        for hop in answer.redirects { printError("tollgate: followed a redirect to \(hop.absoluteString)") }
        let price = gate.quota.price(of: endpoint)
        let left = try await gate.quota.remaining(bucket: price.bucket)
        printError("tollgate: \(endpoint) · status \(answer.status.code) · source \(answer.source) · "
            + "units charged \(answer.unitsCharged) · \(left) units left today in \(price.bucket)")
    }

    /// The exit status for a request that got no answer.
    static func exitCode(for error: any Error) -> Int32 {
        switch error {
        case TollgateError.throttled: throttledExitCode
        case TollgateError.circuitOpen: circuitOpenExitCode
        case TollgateError.quotaExceeded: quotaExceededExitCode
        case HTTPTransportError.invalidRequest: invalidRequestExitCode
        case is HTTPTransportError: networkExitCode
        default: ExitCode.failure.rawValue
        }
    }

    static func parseHeader(_ text: String) -> (HTTPField.Name, String)? {
        guard let colon = text.firstIndex(of: ":"),
              let name = HTTPField.Name(text[..<colon].trimmingCharacters(in: .whitespaces)) else { return nil }
        return (name, text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
}
