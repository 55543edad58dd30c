import ArgumentParser
import Foundation
import Logging
import Tollgate
import TollgatePostgres
import TollgateProxy
import TollgateSQLite

/// The services an admin command works through, over the database `--db` names, built from the
/// YouTube Data API v3 preset's parts and the system clock: the same rules the gate follows.
struct AdminServices {
    let database: OpenedDatabase
    let configuration: GateConfiguration
    let quota: QuotaLedger
    let circuit: CircuitBreaker
    let throttle: RequestThrottler
    let cache: ETagCache

    /// Opens the database, builds the services, runs `body` with them and closes the database,
    /// however `body` ends; a refusal from the store or a service reaches ``CommandErrors`` (one
    /// clear line on standard error, exit status 1). The services' own log lines (state changes at info and
    /// notice) stay quiet unless `--verbose` or `--log-level` asks: each command prints what it did.
    /// - Parameters:
    ///   - database: The `--db` option: a SQLite file or a PostgreSQL URL.
    ///   - logging: The `--verbose` and `--log-level` options.
    ///   - access: `.readOnly` for a command that only shows: nothing is then created, migrated
    ///     or written.
    ///   - configuration: The services' rules.
    ///   - body: The command's work.
    /// - Throws: The store's refusal, or what `body` throws.
    static func with(
        _ database: DatabaseOptions, logging: LoggingOptions, access: SQLiteStore.Access = .readWrite,
        configuration: GateConfiguration = .youTubeDataAPIv3, _ body: (AdminServices) async throws -> Void
    ) async throws {
        let logger = logging.bootstrap()
        let opened = try await database.open(access: access, logger: logger, announcingCreation: true)
        try await opened.closing {
            try await body(try AdminServices(database: opened, configuration: configuration, logger: logger))
        }
    }

    private init(database: OpenedDatabase, configuration: GateConfiguration, logger: Logger) throws {
        self.database = database
        self.configuration = configuration
        let clock = SystemClock()
        let store = database.store
        quota = try QuotaLedger(storage: store, configuration: configuration.quota, clock: clock, logger: logger)
        circuit = CircuitBreaker(storage: store, configuration: configuration.circuit, clock: clock, logger: logger)
        throttle = try RequestThrottler(storage: store, configuration: configuration.throttle, clock: clock, logger: logger)
        cache = try ETagCache(storage: store, configuration: configuration.cache, clock: clock, logger: logger)
    }

    /// The snapshot of the database now, for listings.
    func snapshot(recentEvents: Int = 0) async throws -> DashboardSnapshot {
        try await database.store.dashboardSnapshot(at: Date(), recentEvents: recentEvents)
    }
}

/// Validation shared by the admin commands.
enum AdminArguments {
    /// Reads `--day`: a Pacific date `YYYY-MM-DD` (the option's `transform`, so a command holds a
    /// ``PacificDay``, not text to parse again).
    static func day(_ text: String) throws -> PacificDay {
        guard let day = PacificDay(key: text) else {
            // argument-parser prints it after "The value 'X' is invalid for '--day <YYYY-MM-DD>': ".
            throw ValidationError("not a Pacific date written YYYY-MM-DD (such as 2026-11-25).")
        }
        return day
    }

    /// The longest endpoint name accepted on the command line, in UTF-8 bytes.
    static let maximumEndpointBytes = 200

    /// An endpoint name: not empty, not `*` (the ledger's whole-bucket name), no control
    /// characters, at most ``maximumEndpointBytes`` bytes.
    static func endpoint(_ text: String, label: String = "the endpoint") throws {
        if text.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("\(label) must not be empty.")
        }
        if text.contains(where: \.isNewline) {
            throw ValidationError("\(label) must be one line.")
        }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw ValidationError("\(label) must not contain control characters such as tabs or NUL.")
        }
        if text.trimmingCharacters(in: .whitespaces) == "*" {
            throw ValidationError("\(label) cannot be '*': the quota ledger uses it for whole-bucket events. Use --all where a command offers it.")
        }
        if text.utf8.count > maximumEndpointBytes {
            throw ValidationError("\(label) must be at most \(maximumEndpointBytes) bytes, not \(text.utf8.count).")
        }
    }

    /// Exactly one of an endpoint and `--all`.
    static func endpointOrAll(_ endpoint: String?, all: Bool) throws {
        switch (endpoint, all) {
        case (nil, false): throw ValidationError("Name an endpoint, or pass --all for every endpoint.")
        case (.some, true): throw ValidationError("Name an endpoint or pass --all, not both.")
        case (let endpoint?, false): try Self.endpoint(endpoint)
        case (nil, true): break
        }
    }

    /// A bucket the API description in force knows (the YouTube preset unless `--api`).
    static func bucket(_ name: String, in configuration: QuotaConfiguration = GateConfiguration.youTubeDataAPIv3.quota) throws {
        guard configuration.bucketLimits[name] != nil else {
            let known = configuration.bucketLimits.keys.sorted().joined(separator: ", ")
            // A file written through `proxy --api github-rest` holds that description's buckets,
            // which the default (YouTube) description does not know.
            throw ValidationError("Unknown bucket '\(name)'. Known buckets: \(known). A bucket of another API "
                                  + "needs its description: --api github-rest, say, or --api FILE.")
        }
    }
}

/// Encodes values as the JSON every `--json` prints: sorted keys, snake_case, ISO 8601 dates.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.keyEncodingStrategy = .convertToSnakeCase
    encoder.dateEncodingStrategy = .iso8601
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// One endpoint named, or `--all`: what `circuit reset` and `throttle reset` act on.
struct EndpointSelection: ParsableArguments {
    @Argument(help: "The endpoint, such as videos.list.")
    var endpoint: String?

    @Flag(help: "Every endpoint.")
    var all = false

    func validate() throws {
        try AdminArguments.endpointOrAll(endpoint, all: all)
    }
}
