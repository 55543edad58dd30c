import ArgumentParser
import CoreMetrics
import Foundation
import Logging
import Tollgate
import TollgateAdmin
import TollgateAsyncHTTPClient
import TollgateProxy
import TollgateSimulation

/// `tollgate proxy`: a loopback reverse proxy that puts any HTTP client behind the gate.
struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "Run a loopback reverse proxy that sends every request through the gate.",
        discussion: """
            curl http://127.0.0.1:PORT/youtube/v3/videos?id=… is sent to the same path under --upstream \
            through the cache, circuit breaker, throttle and quota ledger of the database. Answers carry \
            X-Tollgate-Source and X-Tollgate-Units; refusals are 429 (throttled, quota spent) or 503 \
            (circuit open) with Retry-After, and 502 when the upstream cannot be reached (or its \
            certificate does not verify: trust a private CA with --cacert FILE, SSL_CERT_FILE or \
            SSL_CERT_DIR). Links to the upstream in Link, Location and Content-Location (and in JSON bodies \
            when the --api description's rewrite_urls lists their media type) are pointed at the proxy as the \
            client addressed it, so following them stays behind the gate. The first line printed is the address it listens on. Ctrl-C or SIGTERM stops it.
            """
    )

    @Option(help: ArgumentHelp("A loopback HOST:PORT to listen on; port 0 picks a free one.", valueName: "host:port"))
    var listen: String = "127.0.0.1:8080"

    @Option(help: ArgumentHelp("The API's base URL, such as https://www.googleapis.com. Default: the --api description's.", valueName: "url"))
    var upstream: String?

    @OptionGroup var api: APIOptions

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var secrets: SecretOptions

    @OptionGroup var stalePolicy: StalePolicyOptions

    @OptionGroup var tls: TLSOptions

    @Option(help: ArgumentHelp(
        "Seconds a connection may go without a complete request head (or idle between requests) before it is closed.",
        valueName: "seconds"
    ))
    var idleTimeout: Int = 10

    @Option(help: ArgumentHelp("The most client connections open at once; more wait until one closes.", valueName: "count"))
    var maxConnections: Int = 256

    @Option(help: ArgumentHelp(
        "The largest answer body the cache stores, in bytes (5242880 by default); larger answers pass through unstored. "
            + "An answer is kept in memory up to this size while it streams through.",
        valueName: "bytes"
    ))
    var cacheMaxBody: Int?

    @Option(help: ArgumentHelp(
        "Also serve /metrics for Prometheus, the web dashboard and /api/snapshot on HOST:PORT, such as 127.0.0.1:9464.",
        valueName: "host:port"
    ))
    var admin: String?

    @OptionGroup var adminToken: AdminTokenOption

    @Option(help: ArgumentHelp(
        "Write every exchange to this HAR file, secrets redacted as the store redacts them (replay it with tollgate simulate); a recording of its own that is there is continued.",
        valueName: "file"))
    var record: String?

    @Flag(help: "With --record: write bodies too (they can be large, and hold personal data).")
    var recordBodies = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if let admin { try adminToken.validate(address: admin, option: "--admin") }
        do {
            _ = try LoopbackAddress(parsing: listen)
        } catch {
            throw ValidationError("--listen: \(error.description) The proxy spends your quota for anyone who can reach it.")
        }
        guard let upstream = try upstream ?? api.chosen()?.upstream?.absoluteString else {
            throw ValidationError("Missing --upstream: the API's base URL (or an --api description that names one).")
        }
        guard let url = URL(string: upstream), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              url.host != nil else {
            throw ValidationError("--upstream '\(upstream)' is not an absolute http(s) URL.")
        }
        _ = try api.configuration()
        guard (1...86_400).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be 1 to 86400 seconds.") }
        guard (1...65_536).contains(maxConnections) else { throw ValidationError("--max-connections must be 1 to 65536.") }
        if let cacheMaxBody, !(0...(1 << 30)).contains(cacheMaxBody) {
            throw ValidationError("--cache-max-body must be 0 to 1073741824 bytes.")
        }
        _ = try tls.authorities()
        if let record {
            do {
                try HTTPArchiveRecorder.checkDestination(record)
            } catch {
                throw ValidationError("--record: \(error.description)")
            }
        } else if recordBodies {
            throw ValidationError("--record-bodies writes bodies into --record's file: name one with --record FILE.")
        }
    }

    func run() async throws {
        // A server: its warnings (an upstream failing) are its operator's business, so they show;
        // --verbose adds one line per request.
        let logger = logging.bootstrap(label: "tollgate.proxy", quietLevel: .warning)
        // A store that cannot be opened or a port already taken is one clear line, exit 1.
        try await serve(logger: logger)
    }

    private func serve(logger: Logger) async throws {
        // AsyncHTTPClient passes the client's bytes and header fields through unchanged; it is also
        // the client that trusts --cacert.
        try await tls.withTransport { transport in try await serve(through: transport, logger: logger) }
    }

    private func serve(through transport: AsyncHTTPClientTransport, logger: Logger) async throws {
        // With --admin, this process's counters go to the listener's registry.
        let processMetrics = admin.map { _ in ProcessMetrics() }
        var configuration = stalePolicy.applied(to: secrets.applied(to: try api.configuration()))
        if let cacheMaxBody { configuration.cache.maxBodySize = cacheMaxBody }
        let (gate, opened) = try await database.openGate(
            transport: transport,
            configuration: configuration, logger: logger,
            metrics: processMetrics?.factory ?? MetricsSystem.factory
        )
        // validate() made sure there is one.
        let upstream = try upstream ?? api.chosen()?.upstream?.absoluteString ?? ""
        let recorder = try record.map {
            try HTTPArchiveRecorder(path: $0, redaction: SecretRedaction(gate.configuration.cache), recordsBodies: recordBodies)
        }
        try await opened.closing {
            // However the proxy stops, the HAR file is closed whole.
            defer { if let recorder { Task { await recorder.close() } } }
            let proxy = try await GateProxy.start(
                gate: gate, upstream: URL(string: upstream)!, listen: try LoopbackAddress(parsing: listen), naming: try api.naming(),
                rewrittenBodyTypes: Set(try api.chosen()?.rewriteURLs.bodies ?? []), transport: transport,
                idleTimeout: .seconds(idleTimeout),
                maximumConnections: maxConnections, stopsOnSignals: true, recorder: recorder, logger: logger
            )
            // Written straight to the file descriptor, unbuffered: a script waits for this line.
            FileHandle.standardOutput.write(Data(
                "tollgate proxy listening on \(proxy.baseURL.absoluteString) → \(URL(string: upstream)?.absoluteStringWithoutCredentials ?? upstream) (database \(opened.name))\n".utf8
            ))
            var adminServer: AdminServer?
            if let admin {
                do {
                    adminServer = try await AdminListener.start(
                        admin, token: adminToken.resolved(), database: opened, process: processMetrics,
                        freshness: { await gate.freshnessInForce() }, stopsOnSignals: false, logger: logger
                    )
                } catch {
                    // The proxy does not run without the listener it was asked for.
                    await proxy.stop()
                    throw error
                }
            }
            try await proxy.waitUntilStopped()
            await adminServer?.stop()
            await recorder?.close()
            try await gate.flush()
        }
    }
}
