import Foundation
import Logging
import Synchronization

extension Gate {
    /// The freshness chosen for a request: the request's own (``GateRequestOptions/freshFor``), else
    /// its endpoint's (``GateConfiguration/endpointFreshFor``), else the gate's
    /// (``GateConfiguration/freshFor``), as the budget stretches it when it follows the budget.
    /// Nil when nothing is chosen: the cache is then RFC 9111 alone.
    func chosenFreshness(for request: GateRequest) async -> Duration? {
        if let own = request.options.freshFor { return own }
        guard let chosen = configuration.endpointFreshFor[request.endpoint] ?? configuration.freshFor else { return nil }
        guard chosen.followsBudget, chosen.maximum > chosen.minimum else { return chosen.minimum }
        return await freshnessInForce(chosen, endpoint: request.endpoint).lifetime
    }

    /// Whether a stored response may still be served `past` the chosen lifetime: less than the
    /// lifetime plus that window has passed since it was stored or revalidated.
    /// - Parameters:
    ///   - cached: The stored response.
    ///   - request: The request, with its lifetime resolved.
    ///   - window: The chosen window past the lifetime (`stale_if_error`, `stale_while_revalidate`).
    func isWithinChosenStaleness(_ cached: CachedResponse, _ request: GateRequest, window: KeyPath<ChosenFreshness, Duration?>) -> Bool {
        guard let lifetime = request.freshFor,
              let past = (configuration.endpointFreshFor[request.endpoint] ?? configuration.freshFor)?[keyPath: window]
        else { return false }
        return cache.clock.now().timeIntervalSince(cached.validatedAt) < (lifetime + past).timeInterval
    }

    /// The lifetime that follows the budget for `endpoint`: the last decision while it stands,
    /// else a new one from the bucket's spending over the last ``BudgetFreshness/interval``, by
    /// ``BudgetFreshness/inForce(_:last:spending:now:)``, the rule every surface shows.
    /// - Parameters:
    ///   - chosen: The endpoint's bounds.
    ///   - endpoint: The endpoint.
    /// - Returns: The decision in force.
    public func freshnessInForce(_ chosen: ChosenFreshness, endpoint: String) async -> BudgetFreshness.Decision {
        let now = clock.now()
        let last = budgetFreshness.withLock { $0[endpoint] }
        if let last, !last.isDue(at: now) { return last }
        let bucket = quota.price(of: endpoint).bucket
        let spending = await quota.budgetSpending(of: bucket)
        let decision = BudgetFreshness.inForce(chosen, last: last, spending: spending, now: now)
        budgetFreshness.withLock { decisions in
            // One entry per endpoint name, and endpoint names are capped per name template.
            decisions[endpoint] = decision
        }
        if decision.lifetime != last?.lifetime {
            // An operator hears when the freshness starts or stops stretching; each step is a debug line.
            let level: Logger.Level = (decision.reason == .budgetLasts) != (last.map { $0.reason == .budgetLasts } ?? true)
                ? .info : .debug
            logger.log(level: level, "Freshness of \(endpoint) is now \(Self.describe(decision.lifetime)): \(decision.reason)", metadata: [
                "gate.endpoint": "\(endpoint)", "quota.bucket": "\(bucket)",
                "quota.remaining": "\(spending.map { "\($0.remaining)" } ?? "unknown")",
                "quota.units_per_hour": "\(spending.map { "\($0.unitsPerHour)" } ?? "unknown")",
            ])
        }
        return decision
    }

    /// The freshness in force for every endpoint this gate has a `fresh_for` for, and why: what the
    /// gate serves by now (its own decisions where it made them), as the proxy's `/metrics` and
    /// web dashboard show it. Reading it decides nothing: the gate's decisions stay as they were.
    /// - Returns: The rows; none when nothing is chosen.
    public func freshnessInForce() async -> [FreshnessInForce] {
        let decisions = budgetFreshness.withLock { $0 }
        return await quota.freshnessInForce(endpoints: configuration.endpointFreshFor, defaults: configuration.freshFor,
                                            decisions: decisions)
    }
}
