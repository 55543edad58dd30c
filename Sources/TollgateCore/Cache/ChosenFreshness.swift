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
    /// How long past the lifetime a stored answer may still be served when the server fails or
    /// cannot be reached, or the gate refuses to send (`stale_if_error`), whatever its
    /// `must-revalidate` said; nil leaves that to the answer's own directives.
    public var staleIfError: Duration?
    /// How long past the lifetime a stored answer is served at once while the gate revalidates it
    /// in the background (`stale_while_revalidate`), whatever its `must-revalidate` said.
    public var staleWhileRevalidate: Duration?

    /// A fixed lifetime.
    /// - Parameters:
    ///   - lifetime: How long a stored answer is served without asking.
    ///   - staleIfError: How long past it a stored answer stands in for a failure.
    ///   - staleWhileRevalidate: How long past it a stored answer is served while it is revalidated.
    public init(_ lifetime: Duration, staleIfError: Duration? = nil, staleWhileRevalidate: Duration? = nil) {
        self.init(minimum: lifetime, maximum: lifetime, followsBudget: false, staleIfError: staleIfError,
                  staleWhileRevalidate: staleWhileRevalidate)
    }

    /// A lifetime between two bounds, following the budget or not.
    /// - Parameters:
    ///   - minimum: The lifetime while the budget lasts.
    ///   - maximum: The longest it stretches to; at least `minimum` (a smaller one is raised to it).
    ///   - followsBudget: Whether it stretches when the bucket would run out before its reset.
    ///   - staleIfError: How long past the lifetime a stored answer stands in for a failure.
    ///   - staleWhileRevalidate: How long past the lifetime a stored answer is served while it is revalidated.
    public init(
        minimum: Duration, maximum: Duration, followsBudget: Bool, staleIfError: Duration? = nil,
        staleWhileRevalidate: Duration? = nil
    ) {
        self.minimum = max(minimum, .zero)
        self.maximum = max(maximum, self.minimum)
        self.followsBudget = followsBudget
        self.staleIfError = staleIfError.map { max($0, .zero) }
        self.staleWhileRevalidate = staleWhileRevalidate.map { max($0, .zero) }
    }

    /// How a description file writes it: `5m`, or `{min: 1m, max: 1h, follow_budget: true}` in seconds.
    public var description: String {
        let minimumSeconds = minimum.components.seconds
        let stale = (staleIfError.map { ", stale_if_error: \($0.components.seconds)s" } ?? "")
            + (staleWhileRevalidate.map { ", stale_while_revalidate: \($0.components.seconds)s" } ?? "")
        guard followsBudget || maximum != minimum || !stale.isEmpty else { return "\(minimumSeconds)s" }
        return "{min: \(minimumSeconds)s, max: \(maximum.components.seconds)s"
            + (followsBudget ? ", follow_budget: true" : "") + stale + "}"
    }
}
