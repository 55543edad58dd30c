import ArgumentParser
import Foundation

/// `tollgate serve-admin`: the operators' listener alone, for a machine that runs no proxy.
struct ServeAdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve-admin",
        abstract: "Serve /metrics for Prometheus, the web dashboard and /api/snapshot over a database.",
        discussion: """
            Reads the database at each request and writes nothing: every process and machine over the same \
            database reports the same quota, circuits and throttles. The first line printed is the address \
            it listens on. Ctrl-C or SIGTERM stops it.
            """
    )

    @Option(help: ArgumentHelp("HOST:PORT to listen on; port 0 picks a free one. A non-loopback host needs a token.",
                               valueName: "host:port"))
    var listen: String = "127.0.0.1:9464"

    @OptionGroup var token: AdminTokenOption

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @OptionGroup(title: "Freshness (shown when a description is given)") var api: APIOptions

    func validate() throws {
        try token.validate(address: listen, option: "--listen")
        _ = try api.chosen()
    }

    func run() async throws {
        try await AdminListener.serveAlone(listen, token: token.resolved(), database: database,
                                           api: try api.chosen().map { _ in try api.configuration() }, logging: logging)
    }
}
