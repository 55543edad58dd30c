/// What a `304 Not Modified` answer costs on an API, as the API documents it: the one rule the
/// quota ledger and the gate's request machine both follow when a conditional request comes back
/// unchanged.
///
/// APIs differ. Google's quota page for the YouTube Data API v3 says "All API requests, including
/// invalid requests, incur a quota cost of at least one point"
/// (developers.google.com/youtube/v3/determine_quota_cost), and a 304 is measured at 1 unit: on
/// YouTube a revalidation saves bandwidth, not units. GitHub documents that a 304 does not count
/// against its rate limit. For an API nobody has described, the safe answer is ``full``: the
/// ledger never undercounts.
///
/// ```swift
/// NotModifiedCost.units(1).charge(forStatus: 304, price: 50)   // .settled(units: 1)
/// NotModifiedCost.free.charge(forStatus: 304, price: 1)        // .refunded
/// NotModifiedCost.full.charge(forStatus: 304, price: 1)        // .kept
/// ```
public enum NotModifiedCost: Sendable, Hashable, CustomStringConvertible {
    /// A 304 costs this many units, at most the call's full price (`0`: a 304 is free).
    case units(Int)
    /// A 304 costs what the call costs.
    case full

    /// A 304 costs nothing (GitHub's rule).
    public static let free = NotModifiedCost.units(0)

    /// How a description file writes it: `full`, or a number of units.
    public var description: String {
        switch self {
        case .units(let units): "\(units)"
        case .full: "full"
        }
    }

    /// What the charge of a call priced `price` becomes once its answer's status is known.
    ///
    /// Only a `304` changes anything: every other answer keeps the charge. A 304 costs its
    /// documented units, never more than the full price; what it costs less is given back.
    /// - Parameters:
    ///   - status: The answer's HTTP status.
    ///   - price: The units charged on admission for the call.
    /// - Returns: Kept, refunded in full, or settled at fewer units.
    public func charge(forStatus status: Int, price: Int) -> NotModifiedCharge {
        guard status == 304 else { return .kept }
        switch self {
        case .full:
            return .kept
        case .units(let units):
            let cost = max(units, 0)
            if cost >= price { return .kept }
            return cost == 0 ? .refunded : .settled(units: cost)
        }
    }

    /// The units a 304 costs for a call priced `price`.
    /// - Parameter price: The call's full price.
    /// - Returns: The 304's cost: the documented units, at most `price`.
    public func units(ofCallPriced price: Int) -> Int {
        switch charge(forStatus: 304, price: price) {
        case .kept: price
        case .refunded: 0
        case .settled(let units): units
        }
    }
}
