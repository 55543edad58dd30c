import Foundation

/// What one description made of a recording: the numbers `tollgate simulate` reports side by side.
public struct SimulationResult: Sendable, Codable, Hashable {
    /// One bucket's units over the replay.
    public struct Bucket: Sendable, Codable, Hashable {
        /// Units charged over the whole replay, net of refunds.
        public var units: Int
        /// The bucket's limit per window.
        public var limit: Int
        /// Its window (`day`, `hour`, `rolling 60`…).
        public var window: String
        /// Units left in the window in force when the replay ended.
        public var remainingAtEnd: Int
        /// When the bucket first refused for want of units, or nil when it never ran out.
        public var runsOutAt: Date?

        enum CodingKeys: String, CodingKey { case units, limit, window, remainingAtEnd, runsOutAt }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(units, forKey: .units)
            try container.encode(limit, forKey: .limit)
            try container.encode(window, forKey: .window)
            try container.encode(remainingAtEnd, forKey: .remainingAtEnd)
            // null, not absent: a CI script reads "never ran out" as a value.
            try container.encode(runsOutAt, forKey: .runsOutAt)
        }
    }

    /// Units saved, by what saved them: a unit counted here is one the API would have charged
    /// without the gate.
    public struct Savings: Sendable, Codable, Hashable {
        /// Answers served from the store without asking (fresh, or fresh by the freshness chosen).
        public var cache: Int = 0
        /// What a `304` costs less than a full answer.
        public var notModified: Int = 0
        /// Identical requests in flight at once that waited for one answer.
        public var coalescing: Int = 0
        /// Stale answers served instead of a refusal or a failure.
        public var stale: Int = 0
    }

    /// The description's name.
    public var api: String
    /// Requests replayed.
    public var requests: Int
    /// Requests that reached the (recorded) upstream, retries included.
    public var sent: Int
    /// Units charged, all buckets together.
    public var units: Int
    /// Each bucket, by name.
    public var buckets: [String: Bucket]
    /// Refusals by kind (`quota_exceeded`, `throttled`, `circuit_open`).
    public var refusals: [String: Int]
    /// Refusals by endpoint, then kind.
    public var refusalsByEndpoint: [String: [String: Int]]
    /// Answers served stale.
    public var stale: Int
    /// Answers from the store (fresh or revalidated) over answers from the store or the network.
    public var hitRate: Double?
    /// Units saved, by what.
    public var saved: Savings
    /// The endpoints that cost the most units, most first (at most ten).
    public var topEndpoints: [EndpointUnits]
    /// Requests for URLs the recording never answered (answered 404).
    public var unrecorded: Int
    /// When the first bucket ran out, or nil.
    public var runsOutAt: Date?

    enum CodingKeys: String, CodingKey {
        case api, requests, sent, units, buckets, refusals, refusalsByEndpoint, stale, hitRate, saved, topEndpoints,
             unrecorded, runsOutAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(api, forKey: .api)
        try container.encode(requests, forKey: .requests)
        try container.encode(sent, forKey: .sent)
        try container.encode(units, forKey: .units)
        try container.encode(buckets, forKey: .buckets)
        try container.encode(refusals, forKey: .refusals)
        try container.encode(refusalsByEndpoint, forKey: .refusalsByEndpoint)
        try container.encode(stale, forKey: .stale)
        try container.encode(hitRate, forKey: .hitRate)
        try container.encode(saved, forKey: .saved)
        try container.encode(topEndpoints, forKey: .topEndpoints)
        try container.encode(unrecorded, forKey: .unrecorded)
        // null, not absent: "never ran out" is a value a CI script reads.
        try container.encode(runsOutAt, forKey: .runsOutAt)
    }

    /// An endpoint's units.
    public struct EndpointUnits: Sendable, Codable, Hashable {
        /// The endpoint.
        public var endpoint: String
        /// Its units.
        public var units: Int
        /// Its requests.
        public var requests: Int
    }
}
