import Foundation
import Logging
import Tollgate

/// The freshness in force for a command that runs no gate (`status`, `dashboard`, `serve-admin`):
/// decided by the gate's own rule from the ledger, under the description given with `--api`.
enum FreshnessReading {
    /// Reads it from `store` under `configuration`.
    /// - Parameters:
    ///   - store: The opened store.
    ///   - configuration: The rules of the description given with `--api`.
    ///   - logger: Where the ledger logs.
    /// - Returns: A reading to call at each refresh.
    /// - Throws: A configuration error from the ledger.
    static func fromLedger(
        _ store: any CommandStorage, configuration: GateConfiguration, logger: Logger
    ) throws -> @Sendable () async -> [FreshnessInForce] {
        let ledger = try QuotaLedger(storage: store, configuration: configuration.quota, clock: SystemClock(), logger: logger)
        return { await ledger.freshnessInForce(endpoints: configuration.endpointFreshFor, defaults: configuration.freshFor) }
    }
}
