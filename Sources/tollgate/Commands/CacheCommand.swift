import ArgumentParser
import Foundation
import Tollgate

/// `tollgate cache`: the ETag cache.
struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Show and maintain the ETag cache.",
        discussion: "Prunes, clears and vacuums are recorded in admin_events.",
        subcommands: [Stats.self, Prune.self, Clear.self, Vacuum.self],
        defaultSubcommand: Stats.self
    )

    /// `tollgate cache stats`.
    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stats",
            abstract: "Hits, revalidations, misses, stale serves and bytes saved per endpoint on a Pacific day."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var logging: LoggingOptions

        @Option(help: ArgumentHelp("The Pacific date. Default: today.", valueName: "YYYY-MM-DD"),
                transform: AdminArguments.day)
        var day: PacificDay?

        @Flag(help: "Print JSON instead of text.")
        var json = false

        /// What `--json` prints.
        struct Report: Codable {
            struct Endpoint: Codable {
                var endpoint: String
                var hitRate: Double?
                var hits: Int64
                var revalidations: Int64
                var misses: Int64
                var stale: Int64
                var coalesced: Int64
                var bytesSaved: Int64
            }
            var pacificDate: String
            var entries: Int
            var bodyBytes: Int64
            var endpoints: [Endpoint]
        }

        func run() async throws {
            try await AdminServices.with(database, logging: logging, access: .readOnly) { services in
                let day = day ?? PacificDay(containing: Date())
                let rows = try await services.cache.statistics(on: day)
                let totals = try await services.cache.totals()
                if json {
                    return try printJSON(Report(
                        pacificDate: day.key, entries: totals.entries, bodyBytes: totals.bodyBytes,
                        endpoints: rows.map {
                            .init(endpoint: $0.endpoint, hitRate: $0.hitRate, hits: $0.counts.hits,
                                  revalidations: $0.counts.revalidations, misses: $0.counts.misses, stale: $0.counts.stale,
                                  coalesced: $0.counts.coalesced, bytesSaved: $0.counts.bytesSaved)
                        }
                    ))
                }
                print("Cache on \(day.key) (Pacific): \(totals.entries) \(totals.entries == 1 ? "entry" : "entries") stored, "
                    + "\(DashboardRenderer.bytes(Int(totals.bodyBytes))) of bodies")
                if rows.isEmpty { print("  no requests that day") }
                let width = max(8, rows.map(\.endpoint.count).max() ?? 0)
                for row in rows {
                    let rate = row.hitRate.map { String(format: "%.1f%%", $0 * 100) } ?? "–"
                    print("  \(row.endpoint.padding(toLength: width, withPad: " ", startingAt: 0))  hit rate \(rate) · "
                        + "hits \(row.counts.hits) · revalidated \(row.counts.revalidations) · misses \(row.counts.misses) · "
                        + "stale \(row.counts.stale) · coalesced \(row.counts.coalesced) · "
                        + "saved \(DashboardRenderer.bytes(Int(row.counts.bytesSaved)))")
                }
            }
        }
    }

    /// `tollgate cache prune`.
    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prune",
            abstract: "Remove expired entries and evict the least recently used until the limits hold."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            try await AdminServices.with(database, logging: logging) { services in
                let result = try await services.cache.prune(recordingAdminEvent: true)
                print("Pruned: \(result.expired) expired, \(result.evicted) evicted over the limits")
            }
        }
    }

    /// `tollgate cache clear`.
    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear",
            abstract: "Remove every stored response, or one endpoint's. Statistics are kept."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var logging: LoggingOptions

        @Option(help: "Only this endpoint's responses, such as videos.list.")
        var endpoint: String?

        func validate() throws {
            if let endpoint { try AdminArguments.endpoint(endpoint, label: "--endpoint") }
        }

        func run() async throws {
            try await AdminServices.with(database, logging: logging) { services in
                let result = try await services.cache.clear(endpoint: endpoint)
                print("Cleared \(endpoint ?? "every endpoint"): \(result.entries) \(result.entries == 1 ? "entry" : "entries"), "
                    + "\(DashboardRenderer.bytes(Int(result.bodyBytes))) of bodies")
            }
        }
    }

    /// `tollgate cache vacuum`.
    struct Vacuum: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "vacuum",
            abstract: "Compact the database file and checkpoint its write-ahead log (PostgreSQL: VACUUM (ANALYZE)).",
            discussion: "Other processes may keep using the file; the vacuum waits for their write locks."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            try await AdminServices.with(database, logging: logging) { services in
                let result = try await services.database.store.vacuum(at: Date())
                let sizes = "\(DashboardRenderer.bytes(Int(result.bytesBefore))) → \(DashboardRenderer.bytes(Int(result.bytesAfter)))"
                if database.isPostgres() {
                    // VACUUM (ANALYZE), not FULL: the space is reused rather than returned; the server checkpoints its own log.
                    print("Vacuumed and analyzed Tollgate's tables in \(services.database.name): \(sizes)")
                } else {
                    print("Vacuumed \(services.database.name): \(sizes); WAL checkpoint "
                        + (result.checkpointBusy ? "deferred (the file is busy)" : "complete"))
                }
            }
        }
    }
}
