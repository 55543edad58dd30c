import Testing

/// Whether the PostgreSQL suites run. Without `TOLLGATE_POSTGRES_URL` the check below is skipped,
/// and Swift Testing says so with its reason; with it, the server it names must answer, so a URL
/// that points nowhere fails here once instead of as every PostgreSQL test's setup error.
@Suite("PostgreSQL availability")
struct PostgresAvailabilityTests {
    @Test("the server TOLLGATE_POSTGRES_URL names answers: a database is created and dropped on it",
          .enabled(if: PostgresTestDatabase.isConfigured, """
              \(PostgresTestDatabase.environmentVariable) is not set: the PostgreSQL tests are skipped. Start a \
              server with Scripts/postgres-cluster.sh start and export the URL it prints.
              """))
    func configuredServerAnswers() async throws {
        let database = try await PostgresTestDatabase.create()
        try await database.drop()
    }
}
