import ArgumentParser
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Logging
import Tollgate
import TollgateAsyncHTTPClient

/// `tollgate get`: one request through the gate, shaped like curl.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Send one request through the gate, like curl: body to stdout, one summary line to stderr.",
        discussion: """
            Exit status: 0 answered (any HTTP status, unless --fail), 22 with --fail when the final status \
            is 400 or more, 3 throttled, 4 circuit open, 5 quota exceeded, 6 network failure with nothing \
            stored, a body cut short, or a certificate that does not verify (refunded, never retried), 130 \
            interrupted (Ctrl-C, SIGTERM), 64 bad arguments (a --cacert or SSL_CERT_FILE that holds no \
            certificate too) or a request that cannot be sent, 1 other errors (such as a database that cannot \
            be written). The summary line on stderr, with the units charged, is printed whatever the outcome. \
            -o writes through a temporary file in the same directory, renamed at the end: FILE never holds a \
            partial body.
            """
    )

    @Argument(help: "The URL to fetch.")
    var url: String

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The endpoint's name in the cost table. Default: from the URL (YouTube v3 names, else 'METHOD /path').")
    var endpoint: String?

    @Option(help: "Units to charge instead of the cost table's price.")
    var cost: Int?

    @Option(name: [.customShort("X"), .customLong("request")], help: ArgumentHelp(
        "The request method. Default: GET, or POST with --data. Only GET answers are cached.", valueName: "method"
    ))
    var method: String?

    @Option(name: [.customShort("d"), .long], help: ArgumentHelp(
        "The request body; @FILE reads a file, @- standard input. Sent as application/x-www-form-urlencoded unless -H sets Content-Type.",
        valueName: "data"
    ))
    var data: String?

    @Option(name: [.customShort("H"), .long], help: ArgumentHelp("A request header, 'Name: value'. Repeatable.", valueName: "header"))
    var header: [String] = []

    @Flag(name: [.customShort("i"), .long], help: "Write the response's status line and headers to stdout before the body, as curl -i does.")
    var include = false

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp("Write the body to this file instead of stdout.", valueName: "file"))
    var output: String?

    @Flag(name: [.customShort("f"), .long], help: "Exit 22 and write no body when the final HTTP status is 400 or more, as curl -f does.")
    var fail = false

    @Flag(name: [.customShort("L"), .long], help: ArgumentHelp(
        "Follow redirects to other hosts too, without the request's credentials (headers and secret parameters). "
            + "Same-host redirects are always followed; without -L a redirect elsewhere is returned as it is."
    ))
    var location = false

    @Option(help: ArgumentHelp(
        "The most retries after the first attempt, for every endpoint, as curl --retry counts them. "
            + "Default: the description's policy (3, waiting 1, 2 and 4 seconds). 0 never retries.",
        valueName: "num"
    ))
    var retry: Int?

    @OptionGroup var api: APIOptions

    @OptionGroup var secrets: SecretOptions

    @OptionGroup var stalePolicy: StalePolicyOptions

    @OptionGroup var tls: TLSOptions

    @OptionGroup var logging: LoggingOptions

    /// `configuration` with `--retry`'s count on every endpoint's retry policy, when it is given.
    private func retryApplied(to configuration: GateConfiguration) -> GateConfiguration {
        guard let retry else { return configuration }
        var configuration = configuration
        configuration.retry.maximumRetries = retry
        for endpoint in configuration.endpointRetries.keys { configuration.endpointRetries[endpoint]?.maximumRetries = retry }
        return configuration
    }

    func validate() throws {
        _ = try api.configuration()
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
        if let method, HTTPRequest.Method(method) == nil || method.isEmpty {
            throw ValidationError("--request '\(method)' is not an HTTP method token.")
        }
        if let output, output.isEmpty { throw ValidationError("--output needs a file path.") }
        if let retry, !(0...100).contains(retry) { throw ValidationError("--retry must be between 0 and 100, not \(retry).") }
        if data != nil, let method, ["GET", "HEAD"].contains(method.uppercased()) {
            throw ValidationError("--data with -X \(method.uppercased()): a \(method.uppercased()) body has no meaning (RFC 9110 §9.3.1) and the cache could not tell such requests apart.")
        }
        _ = try tls.authorities()
    }

    func run() async throws {
        let logger = logging.bootstrap()
        // A store that cannot be opened or written (read-only, full, locked) is one clear line, exit 1
        // (CommandErrors).
        try await send(logger: logger)
    }

    private func send(logger: Logger) async throws {
        var request = HTTPRequest(url: URL(string: url)!)
        for field in header {
            if let (name, value) = Self.parseHeader(field) { request.headerFields.append(HTTPField(name: name, value: value)) }
        }
        let body = try data.map(Self.readData)
        request.method = method.flatMap { HTTPRequest.Method($0) } ?? (body == nil ? .get : .post)
        if body != nil, request.headerFields[.contentType] == nil {
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        }
        let endpoint = try endpoint ?? api.naming().endpoint(for: request)
        // AsyncHTTPClient, like curl, sends the request as written and returns the bytes as sent.
        try await tls.withTransport { transport in
            let (gate, opened) = try await database.openGate(
                transport: transport,
                configuration: retryApplied(to: stalePolicy.applied(to: secrets.applied(to: try api.configuration()))), logger: logger
            )
            try await opened.closing { try await send(request, body: body, endpoint: endpoint, through: gate) }
        }
    }

    /// Sends the request and writes the answer; Ctrl-C or SIGTERM cancels both (no further attempt,
    /// no retry wait sat out, no partial `-o` file) and the summary with the units charged is still printed.
    private func send(_ request: HTTPRequest, body: Data?, endpoint: String, through gate: Gate) async throws {
        let command = self
        let work = Task { try await command.exchange(request, body: body, endpoint: endpoint, through: gate) }
        let interruption = Interruption { work.cancel() }
        defer { interruption.stop() }
        try await work.value
    }

    private func exchange(_ request: HTTPRequest, body: Data?, endpoint: String, through gate: Gate) async throws {
        let options = GateRequestOptions(
            cost: cost, redirects: location ? .stripCredentialsAcrossOrigins : .sameOrigin, streamsLargeBodies: true
        )
        let answer: GateResponse
        do {
            answer = try await gate.sendReportingCost(request, body: body, endpoint: endpoint, options: options)
        } catch {
            try? await gate.flush()
            let hint: String? = if case HTTPTransportError.tlsFailure = error.error {
                "a private CA? trust its certificate with --cacert FILE or SSL_CERT_FILE"
            } else {
                nil
            }
            throw CommandFailure(error: error.error, subject: endpoint, hint: hint,
                                 detail: "units charged \(error.unitsCharged)")
        }
        try await gate.flush()
        let failed = fail && answer.status.code >= 400
        var bodyFailure: (any Error)?
        if !failed {
            do {
                try await write(answer)
            } catch {
                // The answer was charged: the summary still says so, after what went wrong.
                bodyFailure = error
                CommandErrors.report(CommandFailure(error: error, subject: "\(endpoint): the body was not written whole"))
            }
        }
        for hop in answer.redirects {
            // As the cache stores it: a `key=` echoed into a Location is not printed.
            let shown = (try? gate.cache.key(for: HTTPRequest(url: hop)).url) ?? hop.absoluteString
            printError("tollgate: followed a redirect to \(shown)")
        }
        let price = gate.quota.price(of: endpoint)
        let left = try await gate.quota.remaining(bucket: price.bucket)
        printError("tollgate: \(endpoint) · status \(answer.status.code) · source \(answer.source) · "
            + "units charged \(answer.unitsCharged) · \(left) units left today in \(price.bucket)")
        if let bodyFailure { throw ExitCode(CommandErrors.exitStatus(for: bodyFailure)) }
        if failed { throw ExitCode(CommandErrors.httpErrorStatus) }
    }

    /// Writes the head (with `-i`) and the body to stdout or `--output`, streaming a body too
    /// large for the cache as it arrives.
    private func write(_ answer: GateResponse) async throws {
        let file = try output.map(OutputFile.init(path:))
        let sink: (Data) throws -> Void = file.map { file in file.write } ?? { FileHandle.standardOutput.write($0) }
        if include {
            var head = "HTTP/1.1 \(answer.status.code) \(answer.status.reasonPhrase)\r\n"
            for field in answer.response.headerFields { head += "\(field.name): \(field.value)\r\n" }
            head += "X-Tollgate-Source: \(answer.source)\r\nX-Tollgate-Units: \(answer.unitsCharged)\r\n\r\n"
            FileHandle.standardOutput.write(Data(head.utf8))
        }
        do {
            if let stream = answer.bodyStream {
                // Larger than the cache keeps: written as it arrives, never held whole.
                for try await chunk in stream {
                    try Task.checkCancellation()
                    try sink(chunk)
                }
            } else {
                try sink(answer.body)
            }
            try file?.commit()
        } catch {
            file?.discard()
            throw error
        }
    }

    /// `--data`: the text itself, or a file's bytes after `@` (`@-` for standard input).
    static func readData(_ argument: String) throws -> Data {
        guard argument.hasPrefix("@") else { return Data(argument.utf8) }
        let path = String(argument.dropFirst())
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--data: cannot read '\(path)'.")
        }
        return contents
    }

    static func parseHeader(_ text: String) -> (HTTPField.Name, String)? {
        guard let colon = text.firstIndex(of: ":"),
              let name = HTTPField.Name(text[..<colon].trimmingCharacters(in: .whitespaces)) else { return nil }
        return (name, text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
}
