import ArgumentParser
import Foundation
import Tollgate

/// `tollgate quota`: the daily quota ledger.
struct QuotaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quota",
        abstract: "Show and operate the daily quota ledger.",
        discussion: "Every change is an event in quota_events: limits and resets are never silent.",
        subcommands: [Show.self, SetLimit.self, Reset.self, Reconcile.self],
        defaultSubcommand: Show.self
    )

    /// `tollgate quota show`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Each bucket's limit, use and what is left in its window (a Pacific day by default), per endpoint."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var api: APIOptions

        @OptionGroup var logging: LoggingOptions

        @Option(help: ArgumentHelp("The Pacific date. Default: today.", valueName: "YYYY-MM-DD"),
                transform: AdminArguments.day)
        var day: PacificDay?

        @Flag(help: "Print JSON instead of text.")
        var json = false

        func validate() throws {
            _ = try api.configuration()
        }

        func run() async throws {
            try await AdminServices.with(database, logging: logging, access: .readOnly,
                                         configuration: try api.configuration()) { services in
                let report = try await QuotaReport.read(services, day: day, freshness: try api.configuration())
                if json {
                    try printJSON(report)
                } else {
                    report.printText()
                }
            }
        }
    }

    /// `tollgate quota set-limit`.
    struct SetLimit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-limit",
            abstract: "Set a bucket's daily limit (kept until cleared), or hand it back to the configuration.",
            discussion: "The limit is recorded as a 'limit' event in quota_events."
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var api: APIOptions

        @OptionGroup var logging: LoggingOptions

        @Argument(help: "The bucket, such as youtube.")
        var bucket: String

        @Argument(help: "The daily limit in units.")
        var limit: Int?

        @Flag(help: "Follow the configured limit again instead of an operator's.")
        var clear = false

        func validate() throws {
            try AdminArguments.bucket(bucket, in: try api.configuration().quota)
            switch (limit, clear) {
            case (nil, false): throw ValidationError("Give the daily limit in units, or --clear to follow the configuration.")
            case (.some, true): throw ValidationError("Give a limit or --clear, not both.")
            case (let limit?, false) where limit < 0: throw ValidationError("The daily limit must be zero or more, not \(limit).")
            case (let limit?, false) where limit > QuotaLimits.maximumUnits:
                throw ValidationError("The daily limit must be at most \(DashboardRenderer.grouped(QuotaLimits.maximumUnits)) units, not \(limit).")
            default: break
            }
        }

        func run() async throws {
            try await AdminServices.with(database, logging: logging, configuration: try api.configuration()) { services in
                let status = try await services.quota.setLimit(bucket: bucket, limit: clear ? nil : limit)
                let (limit, period) = status.window.isPacificDay ? ("daily limit", "today") : ("limit per \(status.window)", "in this window")
                print("\(bucket): \(limit) \(DashboardRenderer.grouped(status.limit)) (\(status.limitSource.rawValue)); "
                    + "\(DashboardRenderer.grouped(status.unitsUsed)) used, \(DashboardRenderer.grouped(status.remaining)) left \(period)")
            }
        }
    }

    /// `tollgate quota reset`.
    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Give back every unit a bucket used on a day (today by default).",
            discussion: """
                Each endpoint's units are cancelled by a 'reset' event in quota_events; resetting today \
                also lifts the server's "quota exhausted" mark.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var api: APIOptions

        @OptionGroup var logging: LoggingOptions

        @Option(help: ArgumentHelp("The Pacific date. Default: today.", valueName: "YYYY-MM-DD"),
                transform: AdminArguments.day)
        var day: PacificDay?

        @Option(help: "The bucket. Default: the configuration's default bucket.")
        var bucket: String?

        func validate() throws {
            if let bucket { try AdminArguments.bucket(bucket, in: try api.configuration().quota) }
        }

        func run() async throws {
            try await AdminServices.with(database, logging: logging, configuration: try api.configuration()) { services in
                let day = day ?? PacificDay(containing: Date())
                let reset = try await services.quota.resetDay(day, bucket: bucket)
                let endpoints = reset.unitsCleared.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                print("\(reset.bucket) on \(reset.day): \(DashboardRenderer.grouped(reset.totalUnitsCleared)) units given back"
                    + (endpoints.isEmpty ? "" : " (\(endpoints.joined(separator: ", ")))")
                    + (reset.clearedExhaustedMark ? "; the server's exhausted mark is lifted" : ""))
            }
        }
    }
}

extension QuotaCommand {
    /// `tollgate quota reconcile`.
    struct Reconcile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reconcile",
            abstract: "Align a bucket's count for a day with the number the provider's console shows.",
            discussion: """
                The difference is recorded as one event in quota_events on the endpoint '*' (a 'charge'                 when the console counted more, a 'reset' when less): the ledger is never edited silently.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var api: APIOptions

        @OptionGroup var logging: LoggingOptions

        @Option(help: ArgumentHelp("The units the provider says were used.", valueName: "units"))
        var used: Int

        @Option(help: "The bucket. Default: the configuration's default bucket.")
        var bucket: String?

        @Option(help: ArgumentHelp("The Pacific date. Default: today.", valueName: "YYYY-MM-DD"),
                transform: AdminArguments.day)
        var day: PacificDay?

        func validate() throws {
            if let bucket { try AdminArguments.bucket(bucket, in: try api.configuration().quota) }
            guard QuotaLimits.allowedUnits.contains(used) else {
                throw ValidationError("--used must be 0 to \(DashboardRenderer.grouped(QuotaLimits.maximumUnits)) units, not \(used).")
            }
        }

        func run() async throws {
            try await AdminServices.with(database, logging: logging, configuration: try api.configuration()) { services in
                let result = try await services.quota.reconcile(used: used, bucket: bucket, on: day)
                let change = result.adjustment == 0 ? "no change"
                    : (result.adjustment > 0 ? "+" : "") + DashboardRenderer.grouped(result.adjustment) + " units"
                print("\(result.bucket) on \(result.day): \(DashboardRenderer.grouped(result.used)) units used "
                    + "(the ledger had \(DashboardRenderer.grouped(result.countedBefore)); \(change), recorded as an event)")
            }
        }
    }
}

/// What `quota show` prints: one day of the ledger, per bucket and endpoint.
struct QuotaReport: Codable {
    struct Bucket: Codable {
        var bucket: String
        var limit: Int
        var limitSource: String
        var used: Int
        var remaining: Int
        var exhausted: Bool
        /// The bucket's window (`day America/Los_Angeles`, `hour`, `rolling 3600`…).
        var window: String
        /// The key of the window shown: its start.
        var windowStart: String
        /// When the window's units come back.
        var resetsAt: Date
        var endpoints: [Endpoint]
        /// Today only: net units charged per hour over the last hour.
        var burnPerHour: Double?
        /// Today only: when the bucket runs out at that rate, if before the reset.
        var runsOutAt: Date?
    }

    struct Endpoint: Codable {
        var endpoint: String
        var units: Int
        var calls: Int
        /// Of those calls, the ones that carried a batch of single-ID requests.
        var batches: Int = 0
        /// The IDs those batches carried, together: lookups answered for `batches` calls.
        var idsCarried: Int = 0
    }

    /// The freshness an endpoint's stored answers are served with, without asking (`fresh_for`).
    struct Freshness: Codable {
        /// The endpoint, or `*` for every endpoint without its own.
        var endpoint: String
        /// As the description writes it: `300s`, `{min: 60s, max: 3600s, follow_budget: true}`.
        var chosen: String
        /// The lifetime the rule gives it now, in seconds.
        var lifetimeSeconds: Int
        /// Why.
        var reason: String
    }

    var pacificDate: String
    var resetsAt: Date
    var buckets: [Bucket]
    /// Every endpoint whose stored answers are served without asking for a while; none when the
    /// cache is RFC 9111 alone.
    var freshness: [Freshness] = []

    static func read(_ services: AdminServices, day: PacificDay?, freshness gate: GateConfiguration) async throws -> QuotaReport {
        let day = day ?? PacificDay(containing: Date())
        let usage = try await services.quota.usage(on: day)
        let batches = try await services.quota.batchUsage(on: day)
        let isToday = day == PacificDay(containing: Date())
        let forecasts = isToday ? try await services.quota.forecast() : []
        var buckets: [Bucket] = []
        let configuration = services.quota.configuration
        // Every configured bucket, and those another program's configuration left in the file.
        let stored = try await services.quota.windows()
        let names = Set(configuration.bucketLimits.keys).union(stored.map(\.bucket)).sorted()
        for name in names {
            let status: QuotaBucketStatus
            if configuration.bucketLimits[name] != nil {
                status = try await services.quota.status(bucket: name, on: configuration.window(of: name).isPacificDay ? day : nil)
            } else if let found = stored.first(where: { $0.bucket == name }) {
                status = found
            } else {
                continue
            }
            buckets.append(Bucket(
                bucket: name, limit: status.limit, limitSource: status.limitSource.rawValue, used: status.unitsUsed,
                remaining: status.remaining, exhausted: status.isExhausted, window: status.window.specification,
                windowStart: status.period.key, resetsAt: status.resetsAt,
                endpoints: usage.filter { $0.bucket == name }
                    .sorted { ($0.units, $1.endpoint) > ($1.units, $0.endpoint) }
                    .map { row in
                        let batched = batches.first { $0.bucket == row.bucket && $0.endpoint == row.endpoint }
                        return Endpoint(endpoint: row.endpoint, units: row.units, calls: row.calls,
                                        batches: batched?.batches ?? 0, idsCarried: batched?.ids ?? 0)
                    },
                burnPerHour: isToday ? forecasts.first { $0.bucket == name }?.unitsPerHour ?? 0 : nil,
                runsOutAt: forecasts.first { $0.bucket == name }?.runsOutAt
            ))
        }
        var report = QuotaReport(pacificDate: day.key, resetsAt: day.nextReset, buckets: buckets)
        report.freshness = try await freshnessInForce(services, gate)
        return report
    }

    /// The freshness each endpoint's chosen `fresh_for` gives now, by the gate's own rule
    /// (``QuotaLedger/freshnessInForce(endpoints:defaults:decisions:)``) from the ledger: a gate that
    /// stretched keeps its lifetime in its own memory, which its proxy's `/metrics` shows.
    static func freshnessInForce(_ services: AdminServices, _ gate: GateConfiguration) async throws -> [Freshness] {
        await services.quota.freshnessInForce(endpoints: gate.endpointFreshFor, defaults: gate.freshFor).map { row in
            Freshness(endpoint: row.endpoint, chosen: row.chosen, lifetimeSeconds: Int(row.lifetimeSeconds), reason: row.why)
        }
    }

    func printText() {
        print("Quota on \(pacificDate) (Pacific) · resets \(PacificDay.localTimeDescription(of: resetsAt))")
        for bucket in buckets {
            let window = bucket.window == QuotaWindow.pacificDay.specification ? ""
                : " · per \(bucket.window), window from \(bucket.windowStart), resets \(QuotaWindow.instantKey(bucket.resetsAt))"
            print("\(bucket.bucket): \(DashboardRenderer.grouped(bucket.used))/\(DashboardRenderer.grouped(bucket.limit)) units used · "
                + "\(DashboardRenderer.grouped(bucket.remaining)) left · limit from \(bucket.limitSource)"
                + (bucket.exhausted ? " · EXHAUSTED by the server" : "") + window)
            if let perHour = bucket.burnPerHour, perHour > 0 {
                let rate = DashboardRenderer.grouped(Int(perHour.rounded()))
                // A spent bucket has no run-out ahead of it: the forecast's instant would be now.
                let outlook = bucket.remaining <= 0 ? "spent: refused until the reset"
                    : bucket.runsOutAt.map { "runs out at \(PacificDay.localTimeDescription(of: $0)), before the reset" }
                        ?? "lasts until the reset"
                print("  burning \(rate) units/h over the last hour · \(outlook)")
            }
            let width = max(8, bucket.endpoints.map(\.endpoint.count).max() ?? 0)
            for endpoint in bucket.endpoints {
                print("  \(endpoint.endpoint.padding(toLength: width, withPad: " ", startingAt: 0))  "
                    + "\(DashboardRenderer.grouped(endpoint.units)) units  \(endpoint.calls) calls"
                    + (endpoint.batches == 0 ? "" : ", \(endpoint.batches) of them "
                        + (endpoint.batches == 1 ? "a batch" : "batches")
                        + " carrying \(DashboardRenderer.grouped(endpoint.idsCarried)) IDs"))
            }
        }
        if !freshness.isEmpty {
            print("Freshness chosen (served without asking after a fetch or revalidation)")
            for entry in freshness {
                print("  \(entry.endpoint == "*" ? "every endpoint" : entry.endpoint): fresh for \(entry.lifetimeSeconds) s now"
                    + " · fresh_for \(entry.chosen) · \(entry.reason)")
            }
        }
    }
}
