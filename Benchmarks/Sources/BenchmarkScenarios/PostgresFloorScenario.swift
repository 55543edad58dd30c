import Foundation
import PostgresNIO
import TollgateCore
import TollgatePostgres

/// The floor through the client library the store uses: a bare `UPDATE … RETURNING` of one row,
/// autocommit, over a postgres-nio `PostgresClient` pool, as `PostgresStore` sends its statements
/// (the extended protocol, an unnamed statement each time). Beside pgbench's floor it shows what
/// the Swift client itself costs.
public final class PostgresFloorScenario: Sendable {
    let client: PostgresClient
    private let runTask: Task<Void, Never>

    /// Opens a pool of `connections` to `url` and creates the one-row table if missing.
    /// - Parameters:
    ///   - url: The database (`sslmode=disable`, as a loopback benchmark runs).
    ///   - connections: The pool's size: one per concurrent client.
    /// - Throws: `BenchmarkFailure` for a URL asking for TLS; what the driver throws.
    public init(url: String, connections: Int) async throws {
        let location = try PostgresLocation(url: url)
        guard location.tlsMode == .disable else { throw BenchmarkFailure("the floor runs without TLS: use sslmode=disable") }
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: .disable
        )
        configuration.options.maximumConnections = connections
        let client = PostgresClient(configuration: configuration)
        self.client = client
        runTask = Task { await client.run() }
        try await client.query("CREATE TABLE IF NOT EXISTS tollgate_bench_floor (id integer PRIMARY KEY, used bigint NOT NULL)")
        try await client.query("INSERT INTO tollgate_bench_floor VALUES (1, 0) ON CONFLICT (id) DO NOTHING")
    }

    /// One bare update of the row, its new value read back.
    /// - Returns: True (the operation always "admits").
    /// - Throws: What the driver throws.
    public func update() async throws -> Bool {
        for try await _ in try await client.query("UPDATE tollgate_bench_floor SET used = used + 1 WHERE id = 1 RETURNING used") {}
        return true
    }

    /// Closes the pool.
    public func shutdown() async {
        runTask.cancel()
        await runTask.value
    }
}
