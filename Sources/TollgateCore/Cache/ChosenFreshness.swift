/// The freshness a caller chooses for stored answers (`fresh_for` in a description file): a stored
/// answer is served without asking the server for this long after it was fetched or revalidated,
/// whatever the server's `max-age=0` or `no-cache` said. An answer the server marked `no-store` is
/// never stored, so nothing chosen here ever serves one.
///
/// On YouTube a revalidation costs a unit like any request (a `304` costs 1), and Google's answers
/// say `private, max-age=0, must-revalidate`: what saves units there is not asking.
///
/// ```swift
/// ChosenFreshness(.seconds(300))                                     // fresh_for: 5m
/// ChosenFreshness(minimum: .seconds(60), maximum: .seconds(3600),
///                 followsBudget: true)                               // {min: 1m, max: 1h, follow_budget: true}
/// ```
public struct ChosenFreshness: Sendable, Hashable, CustomStringConvertible {
    /// The lifetime when the budget is not running out (or always, when ``followsBudget`` is false).
    public var minimum: Duration
    /// The longest lifetime ``followsBudget`` may stretch to; equal to ``minimum`` for a fixed lifetime.
    public var maximum: Duration
    /// Whether the lifetime stretches from ``minimum`` toward ``maximum`` when the endpoint's
    /// bucket, at the current rate, would run out before its window resets (``BudgetFreshness``).
    public var followsBudget: Bool

    /// A fixed lifetime.
    /// - Parameter lifetime: How long a stored answer is served without asking.
    public init(_ lifetime: Duration) {
        self.init(minimum: lifetime, maximum: lifetime, followsBudget: false)
    }

    /// A lifetime between two bounds, following the budget or not.
    /// - Parameters:
    ///   - minimum: The lifetime while the budget lasts.
    ///   - maximum: The longest it stretches to; at least `minimum` (a smaller one is raised to it).
    ///   - followsBudget: Whether it stretches when the bucket would run out before its reset.
    public init(minimum: Duration, maximum: Duration, followsBudget: Bool) {
        self.minimum = max(minimum, .zero)
        self.maximum = max(maximum, self.minimum)
        self.followsBudget = followsBudget
    }

    /// How a description file writes it: `5m`, or `{min: 1m, max: 1h, follow_budget: true}` in seconds.
    public var description: String {
        let minimumSeconds = minimum.components.seconds
        guard followsBudget || maximum != minimum else { return "\(minimumSeconds)s" }
        return "{min: \(minimumSeconds)s, max: \(maximum.components.seconds)s"
            + (followsBudget ? ", follow_budget: true}" : "}")
    }
}
