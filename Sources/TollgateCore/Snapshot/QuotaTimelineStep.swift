import Foundation

/// The net units one bucket was charged during one step of a Pacific day: what a burn chart of
/// the day draws, cumulated.
public struct QuotaTimelineStep: Sendable, Hashable, Codable {
    /// The bucket.
    public var bucket: String
    /// The step's start, `stepSeconds` after the step before it (the first at the day's start).
    public var start: Date
    /// Units charged in the step, net of refunds and resets (may be negative).
    public var units: Int

    /// Creates a step. Public so that a store in another module (the PostgreSQL store) can build them.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - start: The step's start.
    ///   - units: Units charged in the step, net of refunds and resets.
    public init(bucket: String, start: Date, units: Int) {
        self.bucket = bucket
        self.start = start
        self.units = units
    }
}
