import ArgumentParser

@main
struct TollgateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tollgate",
        abstract: "Inspect and operate a Tollgate database: quota ledger, circuits, throttles, cache.",
        discussion: """
            The database is chosen by --db, else the TOLLGATE_DB environment variable, else \
            tollgate.sqlite in the user's data directory.
            """,
        subcommands: [
            DemoCommand.self, GetCommand.self, ProxyCommand.self, StatusCommand.self, DashboardCommand.self,
            QuotaCommand.self, CircuitCommand.self, ThrottleCommand.self, CacheCommand.self, MigrateCommand.self,
            APICommand.self, ServeAdminCommand.self, SimulateCommand.self,
        ]
    )

    /// Every error line starts the same way, argument-parser's own too (see ``CommandErrors``).
    static var _errorPrefix: String { CommandErrors.prefix }

    /// Parses the command line and runs the command; whatever it throws is reported by
    /// ``CommandErrors``, in one format, with the exit status README lists.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asynchronous = command as? AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            CommandErrors.exit(with: error)
        }
    }
}
