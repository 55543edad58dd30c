import Foundation

/// The freshness an endpoint's stored answers are served with now, without asking (`fresh_for`),
/// and why: one row of what `quota show`, `status`, the web dashboard and `/metrics` show. Every
/// surface makes it with ``BudgetFreshness/inForce(_:last:spending:now:)``, the rule the gate serves by.
public struct FreshnessInForce: Sendable, Hashable, Codable {
    /// Who decided the lifetime shown.
    public enum DecidedBy: String, Sendable, Hashable, Codable {
        /// Nobody: a fixed `fresh_for` is what the description says.
        case description
        /// The gate of the process that shows it, which serves by it.
        case gate
        /// The rule, now, from the ledger, as a gate deciding now from its minimum would: a process
        /// that runs no gate (`quota show`, `status`) cannot see a running gate's memory, which may
        /// have stretched further (its `/metrics` and dashboard show that one).
        case ledger
    }

    /// The endpoint, or `*` for every endpoint without a `fresh_for` of its own.
    public var endpoint: String
    /// The bucket whose budget it follows (the endpoint's bucket).
    public var bucket: String
    /// As the description writes it: `300s`, `{min: 60s, max: 3600s, follow_budget: true}`.
    public var chosen: String
    /// Whether the lifetime follows the budget.
    public var followsBudget: Bool
    /// The lifetime in force, in seconds.
    public var lifetimeSeconds: Double
    /// Why it is in force.
    public var reason: BudgetFreshness.Reason
    /// Who decided it.
    public var decidedBy: DecidedBy
    /// When it was decided (nil for a fixed lifetime).
    public var decidedAt: Date?

    /// Creates a row from a decision.
    /// - Parameters:
    ///   - endpoint: The endpoint, or `*`.
    ///   - bucket: The bucket it follows.
    ///   - freshness: The chosen bounds.
    ///   - decision: The decision in force.
    ///   - decidedBy: Who decided it.
    public init(endpoint: String, bucket: String, freshness: ChosenFreshness, decision: BudgetFreshness.Decision,
                decidedBy: DecidedBy) {
        self.endpoint = endpoint
        self.bucket = bucket
        chosen = freshness.description
        followsBudget = freshness.followsBudget && freshness.maximum > freshness.minimum
        lifetimeSeconds = decision.lifetime.timeInterval
        reason = decision.reason
        self.decidedBy = followsBudget ? decidedBy : .description
        decidedAt = followsBudget ? decision.decidedAt : nil
    }

    /// Why, in words: `fixed`, or `follows youtube: the budget lasts at this rate`.
    public var why: String {
        followsBudget ? "follows \(bucket): \(reason.description)" : reason.description
    }
}
