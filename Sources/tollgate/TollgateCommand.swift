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
            APICommand.self, ServeAdminCommand.self,
        ]
    )
}
