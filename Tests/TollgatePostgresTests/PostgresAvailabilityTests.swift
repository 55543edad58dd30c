import Testing

@Suite("PostgreSQL availability")
struct PostgresAvailabilityTests {
    @Test("the PostgreSQL tests run when TOLLGATE_POSTGRES_URL names a server, and are skipped visibly otherwise")
    func reportsWhetherPostgresTestsRun() {
        if PostgresTestDatabase.isConfigured {
            print("TollgatePostgresTests: running the PostgreSQL tests against \(PostgresTestDatabase.environmentVariable)")
        } else {
            // A visible line, not an Issue: a laptop without PostgreSQL still passes.
            print("""
                TollgatePostgresTests: SKIPPING the PostgreSQL tests: \(PostgresTestDatabase.environmentVariable) is not set. \
                Start a server with Scripts/postgres-cluster.sh start and export the URL it prints.
                """)
        }
    }
}
