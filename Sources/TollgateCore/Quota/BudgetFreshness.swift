import Foundation

/// The rule behind `follow_budget`: how long stored answers stay fresh so that a bucket's units
/// last until its window resets.
///
/// When the bucket, spent at its current rate, would run out before its reset, the lifetime in
/// force is stretched by the factor the spending exceeds what is left (a revalidation every
/// lifetime costs units in proportion to 1 / lifetime), between the chosen minimum and maximum;
/// when spending slows, it shrinks back toward the minimum by the same rule. A share of what is
/// left (``margin``) is kept back, so the window ends with units to spare. The rate is measured
/// over ``interval`` and the lifetime decided again once per ``interval``, so that each decision
/// sees the spending of the lifetime before it.
///
/// The rule knows the bucket, not which endpoint spends it: an endpoint that follows the budget
/// stretches for every endpoint's spending in its bucket.
public enum BudgetFreshness {
    /// How long the rate is measured over, and how long a decision stands.
    public static let interval: Duration = .seconds(600)
    /// The share of what is left that the rest of the window is planned to spend: 90 %.
    public static let margin = 0.9

    /// Why a lifetime is in force. The raw value is the short code `/metrics` labels it with; the
    /// description says it in words.
    public enum Reason: String, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The lifetime does not follow the budget: it is what `fresh_for` says.
        case fixed
        /// At the current rate the bucket lasts until its reset: the chosen minimum.
        case budgetLasts = "budget_lasts"
        /// At the current rate the bucket would run out before its reset: stretched.
        case stretched
        /// Stretched as far as allowed, and the bucket would still run out.
        case atMaximum = "at_maximum"
        /// Nothing is left in the window.
        case spent
        /// The ledger could not be read: the last decision stands, else the longest lifetime allowed.
        case ledgerUnreadable = "ledger_unreadable"

        /// The reason in words.
        public var description: String {
            switch self {
            case .fixed: "fixed"
            case .budgetLasts: "the budget lasts at this rate"
            case .stretched: "stretched: the budget would run out before the reset at this rate"
            case .atMaximum: "at its maximum: the budget would run out before the reset even so"
            case .spent: "the bucket is spent until its reset"
            case .ledgerUnreadable: "the ledger could not be read: the longest lifetime allowed"
            }
        }
    }

    /// What the rule reads of a bucket: how fast it is spent and what is left until when.
    public struct Spending: Sendable, Hashable {
        /// The bucket's net spending rate, measured over the last ``BudgetFreshness/interval``.
        public var unitsPerHour: Double
        /// The units left in the bucket's window.
        public var remaining: Int
        /// When the bucket's window resets.
        public var resetsAt: Date

        /// Creates a reading.
        /// - Parameters:
        ///   - unitsPerHour: The net spending rate over the last interval.
        ///   - remaining: The units left in the window.
        ///   - resetsAt: When the window resets.
        public init(unitsPerHour: Double, remaining: Int, resetsAt: Date) {
            self.unitsPerHour = unitsPerHour
            self.remaining = remaining
            self.resetsAt = resetsAt
        }
    }

    /// A lifetime decided, when, and why.
    public struct Decision: Sendable, Hashable {
        /// The freshness lifetime in force.
        public var lifetime: Duration
        /// When it was decided.
        public var decidedAt: Date
        /// Why.
        public var reason: Reason

        /// Creates a decision.
        /// - Parameters:
        ///   - lifetime: The lifetime in force.
        ///   - decidedAt: When it was decided.
        ///   - reason: Why.
        public init(lifetime: Duration, decidedAt: Date, reason: Reason) {
            self.lifetime = lifetime
            self.decidedAt = decidedAt
            self.reason = reason
        }

        /// Whether it is due to be decided again at `now` (an interval has passed, or the clock went back).
        /// - Parameter now: The time.
        /// - Returns: True when a new decision is due.
        public func isDue(at now: Date) -> Bool {
            let elapsed = now.timeIntervalSince(decidedAt)
            return elapsed < 0 || elapsed >= BudgetFreshness.interval.timeInterval
        }
    }

    /// The lifetime in force for chosen bounds: the one rule the gate serves by and every surface
    /// (`quota show`, `status`, the web dashboard, `/metrics`) shows. A fixed lifetime is itself; one
    /// that follows the budget keeps the `last` decision while it stands, and is decided again
    /// (``decide(_:inForce:unitsPerHour:remaining:now:resetsAt:)``, from the last lifetime, else
    /// the minimum) once it is due.
    /// - Parameters:
    ///   - freshness: The chosen bounds.
    ///   - last: The decision in force until now, if one was made (a gate keeps its own).
    ///   - spending: The bucket's spending, or nil when the ledger could not be read.
    ///   - now: The time.
    /// - Returns: The decision in force at `now`.
    public static func inForce(_ freshness: ChosenFreshness, last: Decision?, spending: Spending?, now: Date) -> Decision {
        guard freshness.followsBudget, freshness.maximum > freshness.minimum else {
            return Decision(lifetime: freshness.minimum, decidedAt: now, reason: .fixed)
        }
        if let last, !last.isDue(at: now) { return last }
        guard let spending else {
            // Without the ledger the rate is unknown: keep what was decided, else spend as little as allowed.
            return last ?? Decision(lifetime: freshness.maximum, decidedAt: now, reason: .ledgerUnreadable)
        }
        return decide(freshness, inForce: last?.lifetime ?? freshness.minimum, unitsPerHour: spending.unitsPerHour,
                      remaining: spending.remaining, now: now, resetsAt: spending.resetsAt)
    }

    /// The lifetime to put in force.
    /// - Parameters:
    ///   - freshness: The chosen bounds.
    ///   - inForce: The lifetime in force while `unitsPerHour` was measured (the minimum at first).
    ///   - unitsPerHour: The bucket's net spending rate, measured over the last ``interval``.
    ///   - remaining: The units left in the bucket's window.
    ///   - now: The time.
    ///   - resetsAt: When the bucket's window resets.
    /// - Returns: The lifetime, between the bounds, and why.
    public static func decide(
        _ freshness: ChosenFreshness, inForce: Duration, unitsPerHour: Double, remaining: Int, now: Date,
        resetsAt: Date
    ) -> Decision {
        let minimum = freshness.minimum, maximum = freshness.maximum
        guard freshness.followsBudget, maximum > minimum else {
            return Decision(lifetime: minimum, decidedAt: now, reason: .fixed)
        }
        guard remaining > 0 else { return Decision(lifetime: maximum, decidedAt: now, reason: .spent) }
        let hoursLeft = max(resetsAt.timeIntervalSince(now), 0) / 3600
        let projected = max(unitsPerHour, 0) * hoursLeft
        let affordable = Double(remaining) * margin
        // The lifetime the spending was measured under, at least a second so a zero minimum can grow.
        let base = max(min(max(inForce, minimum), maximum).timeInterval, 1)
        let wanted = base * projected / affordable
        guard wanted.isFinite, wanted > minimum.timeInterval else {
            return Decision(lifetime: minimum, decidedAt: now, reason: .budgetLasts)
        }
        guard wanted < maximum.timeInterval else {
            return Decision(lifetime: maximum, decidedAt: now, reason: .atMaximum)
        }
        return Decision(lifetime: .milliseconds(Int64((wanted * 1000).rounded(.up))), decidedAt: now, reason: .stretched)
    }
}
