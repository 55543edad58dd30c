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
    /// else a new one from the bucket's spending over the last ``BudgetFreshness/interval``.
    /// - Parameters:
    ///   - chosen: The endpoint's bounds.
    ///   - endpoint: The endpoint.
    /// - Returns: The decision in force.
    public func freshnessInForce(_ chosen: ChosenFreshness, endpoint: String) async -> BudgetFreshness.Decision {
        let now = clock.now()
        let last = budgetFreshness.withLock { $0[endpoint] }
        if let last, !last.isDue(at: now) { return last }
        let bucket = quota.price(of: endpoint).bucket
        guard let forecast = try? await quota.forecast(over: BudgetFreshness.interval).first(where: { $0.bucket == bucket })
        else {
            // The ledger cannot be read: keep what was decided, else the longest lifetime allowed.
            return last ?? BudgetFreshness.Decision(lifetime: chosen.maximum, decidedAt: now, reason: .atMaximum)
        }
        let decision = BudgetFreshness.decide(
            chosen, inForce: last?.lifetime ?? chosen.minimum, unitsPerHour: forecast.unitsPerHour,
            remaining: forecast.remaining, now: now, resetsAt: forecast.resetsAt
        )
        budgetFreshness.withLock { decisions in
            // One entry per endpoint name, and endpoint names are capped per name template.
            decisions[endpoint] = decision
        }
        if decision.lifetime != last?.lifetime {
            // An operator hears when the freshness starts or stops stretching; each step is a debug line.
            let level: Logger.Level = (decision.reason == .budgetLasts) != (last.map { $0.reason == .budgetLasts } ?? true)
                ? .info : .debug
            logger.log(level: level, "Freshness of \(endpoint) is now \(Self.describe(decision.lifetime)): \(decision.reason.rawValue)", metadata: [
                "gate.endpoint": "\(endpoint)", "quota.bucket": "\(bucket)", "quota.remaining": "\(forecast.remaining)",
                "quota.units_per_hour": "\(forecast.unitsPerHour)",
            ])
        }
        return decision
    }
}
