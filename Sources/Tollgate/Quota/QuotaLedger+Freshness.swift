import Foundation

extension QuotaLedger {
    /// The freshness in force for every endpoint with a chosen `fresh_for`, and why, by the one rule
    /// the gate serves by (``BudgetFreshness/inForce(_:last:spending:now:)``).
    ///
    /// Rows: `*` for the gate's default when it has one, each endpoint with a `fresh_for` of its own,
    /// and each endpoint `decisions` holds that follows the default.
    /// - Parameters:
    ///   - endpoints: Each endpoint's own `fresh_for`.
    ///   - defaults: The `fresh_for` of every other endpoint, if any.
    ///   - decisions: The decisions a gate keeps, by endpoint (none in a process that runs no gate).
    /// - Returns: The rows, `*` first, then by endpoint; none when nothing is chosen.
    public func freshnessInForce(
        endpoints: [String: ChosenFreshness], defaults: ChosenFreshness?, decisions: [String: BudgetFreshness.Decision] = [:]
    ) async -> [FreshnessInForce] {
        var chosen = endpoints.sorted { $0.key < $1.key }.map { (endpoint: $0.key, freshness: $0.value) }
        if let defaults {
            let following = decisions.keys.filter { endpoints[$0] == nil }.sorted().map { (endpoint: $0, freshness: defaults) }
            chosen = [(endpoint: "*", freshness: defaults)] + (chosen + following).sorted { $0.endpoint < $1.endpoint }
        }
        guard !chosen.isEmpty else { return [] }
        let now = clock.now()
        var spending: [String: BudgetFreshness.Spending]?
        if chosen.contains(where: { $0.freshness.followsBudget }),
           let forecasts = try? await forecast(over: BudgetFreshness.interval) {
            spending = Dictionary(forecasts.map {
                ($0.bucket, BudgetFreshness.Spending(unitsPerHour: $0.unitsPerHour, remaining: $0.remaining, resetsAt: $0.resetsAt))
            }, uniquingKeysWith: { first, _ in first })
        }
        return chosen.map { endpoint, freshness in
            let bucket = endpoint == "*" ? configuration.defaultBucket : price(of: endpoint).bucket
            let last = decisions[endpoint]
            let decision = BudgetFreshness.inForce(freshness, last: last, spending: spending?[bucket], now: now)
            return FreshnessInForce(endpoint: endpoint, bucket: bucket, freshness: freshness, decision: decision,
                                    decidedBy: last == nil ? .ledger : .gate)
        }
    }

    /// The bucket's spending as ``BudgetFreshness`` reads it, over its last interval.
    /// - Parameter bucket: The bucket.
    /// - Returns: The reading, or nil when the ledger cannot be read or has no such bucket.
    func budgetSpending(of bucket: String) async -> BudgetFreshness.Spending? {
        guard let forecast = try? await forecast(over: BudgetFreshness.interval).first(where: { $0.bucket == bucket }) else {
            return nil
        }
        return BudgetFreshness.Spending(unitsPerHour: forecast.unitsPerHour, remaining: forecast.remaining,
                                        resetsAt: forecast.resetsAt)
    }
}
