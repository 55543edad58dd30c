/// The quota ledger's cost table: which bucket each endpoint's units come out of, and how many.
///
/// Buckets are daily budgets, such as YouTube's 10,000 units. Endpoints missing from the table
/// cost ``defaultCost`` in ``defaultBucket`` (the ledger logs each one once, so the table can be
/// completed). ``youTubeDataAPIv3`` is the YouTube Data API v3 table.
///
/// ```swift
/// var configuration = QuotaConfiguration.youTubeDataAPIv3
/// configuration.bucketLimits["youtube"] = 1_000_000        // after a quota extension
/// configuration.endpointCosts["search.list"] = .init(bucket: "search", units: 100)
/// configuration.bucketLimits["search"] = 10_000          // a method metered in a bucket of its own
/// ```
public struct QuotaConfiguration: Sendable, Hashable {
    /// One endpoint's price.
    public struct EndpointCost: Sendable, Hashable {
        /// The bucket charged.
        public var bucket: String
        /// The units one call costs.
        public var units: Int
        /// What a `304 Not Modified` answer costs, as the API documents it: the full price by
        /// default (the ledger never undercounts an API it knows nothing about); YouTube charges
        /// 1 unit, GitHub nothing.
        public var notModifiedCost: NotModifiedCost
        /// More buckets the same call is charged in, for an API that meters one call in several
        /// quotas. The reservation charges them all in one transaction, or none.
        public var additionalCharges: [BucketCharge]
        /// Where the call's actual cost is read from its answer, for an API that bills what it
        /// did (an LLM's tokens): the charge made on admission is an estimate, settled at the
        /// actual cost in the answer's own transaction. Nil: the price is the cost.
        public var actualCost: ActualCost?

        /// Every bucket the call is charged in, with its units: ``bucket`` first.
        public var charges: [BucketCharge] { [BucketCharge(bucket: bucket, units: units)] + additionalCharges }

        /// Creates a price.
        /// - Parameters:
        ///   - bucket: The bucket charged.
        ///   - units: The units one call costs; zero or more.
        ///   - notModifiedCost: What a 304 answer costs; the full price by default.
        ///   - additionalCharges: More buckets charged for the same call.
        ///   - actualCost: Where the actual cost is read from the answer, if the price is an estimate.
        public init(
            bucket: String, units: Int, notModifiedCost: NotModifiedCost = .full, additionalCharges: [BucketCharge] = [],
            actualCost: ActualCost? = nil
        ) {
            self.actualCost = actualCost
            self.bucket = bucket
            self.units = units
            self.notModifiedCost = notModifiedCost
            self.additionalCharges = additionalCharges
        }
    }

    /// Units of one bucket.
    public struct BucketCharge: Sendable, Hashable {
        /// The bucket.
        public var bucket: String
        /// The units charged in it.
        public var units: Int

        /// Creates a charge.
        /// - Parameters:
        ///   - bucket: The bucket.
        ///   - units: The units charged in it.
        public init(bucket: String, units: Int) {
            self.bucket = bucket
            self.units = units
        }
    }

    /// Each bucket's limit in units per window (a day, reset at midnight Pacific time, unless
    /// ``bucketWindows`` says otherwise). An operator's limit (``QuotaLedger/setLimit(bucket:limit:)``)
    /// wins over these until the operator clears it.
    public var bucketLimits: [String: Int]
    /// The window each bucket counts over; a bucket missing here counts the Pacific day.
    public var bucketWindows: [String: QuotaWindow] = [:]
    /// The buckets that pace their last units, and how (``QuotaPacing``).
    public var bucketPacing: [String: QuotaPacing] = [:]
    /// Which limit the server announces in its answers' fields each bucket follows (see
    /// ``AnnouncedLimitSelector``); a bucket missing here ignores them.
    public var announcedLimits: [String: AnnouncedLimitSelector] = [:]
    /// The known endpoints' prices.
    public var endpointCosts: [String: EndpointCost]
    /// The bucket an unknown endpoint is charged in.
    public var defaultBucket: String
    /// What an unknown endpoint costs. 1 by default.
    public var defaultCost: Int
    /// What a 304 answer to an endpoint missing from ``endpointCosts`` costs: the full price by default.
    public var notModifiedCostByDefault: NotModifiedCost
    /// Usage levels, in percent of a bucket's limit, that the ledger warns about once a day each.
    public var warningPercents: [Int]
    /// Whether endpoints missing from ``endpointCosts`` are meant to cost the default, as in an
    /// API description whose routes name endpoints that its `endpoints` does not list: the ledger
    /// then notes them at debug level instead of warning that the table is incomplete.
    public var chargesUnlistedEndpointsTheDefault = false

    /// Creates a cost table.
    /// - Parameters:
    ///   - bucketLimits: Each bucket's daily limit.
    ///   - endpointCosts: The known endpoints' prices.
    ///   - defaultBucket: The bucket for unknown endpoints; must be in `bucketLimits`.
    ///   - defaultCost: What an unknown endpoint costs.
    ///   - notModifiedCostByDefault: What a 304 to an unknown endpoint costs; the full price by default.
    ///   - warningPercents: Usage levels to warn about once a day, 80 % and 95 % by default.
    public init(
        bucketLimits: [String: Int],
        endpointCosts: [String: EndpointCost] = [:],
        defaultBucket: String,
        defaultCost: Int = 1,
        notModifiedCostByDefault: NotModifiedCost = .full,
        warningPercents: [Int] = [80, 95]
    ) {
        self.bucketLimits = bucketLimits
        self.endpointCosts = endpointCosts
        self.defaultBucket = defaultBucket
        self.defaultCost = defaultCost
        self.notModifiedCostByDefault = notModifiedCostByDefault
        self.warningPercents = warningPercents
    }

    /// The price of a known endpoint.
    /// - Parameter endpoint: The endpoint, such as `search.list`.
    /// - Returns: Its price, or nil when the table does not list it.
    public func cost(for endpoint: String) -> EndpointCost? {
        endpointCosts[endpoint]
    }

    /// The window a bucket counts over: the Pacific day unless ``bucketWindows`` says otherwise.
    /// - Parameter bucket: The bucket.
    /// - Returns: Its window.
    public func window(of bucket: String) -> QuotaWindow {
        bucketWindows[bucket] ?? .pacificDay
    }

    /// The price the ledger charges: the endpoint's own, else the default.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The price.
    public func effectiveCost(for endpoint: String) -> EndpointCost {
        endpointCosts[endpoint]
            ?? EndpointCost(bucket: defaultBucket, units: defaultCost, notModifiedCost: notModifiedCostByDefault)
    }

    /// Checks that every bucket named has a limit and that every limit and cost is within
    /// ``QuotaLimits/allowedUnits``.
    /// - Throws: ``QuotaLedgerError/invalidConfiguration(_:)`` naming the first problem.
    public func validate() throws(QuotaLedgerError) {
        func fail(_ reason: String) -> QuotaLedgerError { .invalidConfiguration(reason) }
        let allowed = QuotaLimits.allowedUnits
        if let (bucket, limit) = bucketLimits.sorted(by: { $0.key < $1.key }).first(where: { !allowed.contains($0.value) }) {
            throw fail(limit < 0 ? "bucket \(bucket) has a negative daily limit (\(limit))"
                : "bucket \(bucket) has a daily limit above the maximum of \(QuotaLimits.maximumUnits) units (\(limit))")
        }
        guard bucketLimits[defaultBucket] != nil else {
            throw fail("the default bucket \(defaultBucket) has no daily limit")
        }
        guard defaultCost >= 0 else { throw fail("the default cost is negative (\(defaultCost))") }
        if case .units(let units) = notModifiedCostByDefault, !QuotaLimits.allowedUnits.contains(units) {
            throw fail("a 304 costs \(units) units by default, outside 0 to \(QuotaLimits.maximumUnits)")
        }
        guard defaultCost <= QuotaLimits.maximumUnits else {
            throw fail("the default cost is above the maximum of \(QuotaLimits.maximumUnits) units (\(defaultCost))")
        }
        for (endpoint, cost) in endpointCosts.sorted(by: { $0.key < $1.key }) {
            guard bucketLimits[cost.bucket] != nil else {
                throw fail("\(endpoint) is charged in bucket \(cost.bucket), which has no daily limit")
            }
            guard cost.units >= 0 else { throw fail("\(endpoint) has a negative cost (\(cost.units))") }
            if case .units(let units) = cost.notModifiedCost, !QuotaLimits.allowedUnits.contains(units) {
                throw fail("a 304 of \(endpoint) costs \(units) units, outside 0 to \(QuotaLimits.maximumUnits)")
            }
            guard cost.units <= QuotaLimits.maximumUnits else {
                throw fail("\(endpoint) costs more than the maximum of \(QuotaLimits.maximumUnits) units (\(cost.units))")
            }
            var buckets: Set<String> = [cost.bucket]
            for extra in cost.additionalCharges {
                guard bucketLimits[extra.bucket] != nil else {
                    throw fail("\(endpoint) is also charged in bucket \(extra.bucket), which has no daily limit")
                }
                guard buckets.insert(extra.bucket).inserted else {
                    throw fail("\(endpoint) is charged twice in bucket \(extra.bucket)")
                }
                guard QuotaLimits.allowedUnits.contains(extra.units) else {
                    throw fail("\(endpoint) costs \(extra.units) units in \(extra.bucket), outside 0 to \(QuotaLimits.maximumUnits)")
                }
            }
        }
        for (bucket, window) in bucketWindows.sorted(by: { $0.key < $1.key }) {
            guard bucketLimits[bucket] != nil else { throw fail("bucket \(bucket) has a window but no limit") }
            switch window {
            case .day(let zone), .month(let zone):
                guard QuotaWindow.isKnownTimeZone(zone) else {
                    throw fail("bucket \(bucket) counts in time zone \(zone), which this machine does not know")
                }
            case .rolling(let seconds):
                guard QuotaWindow.rollingSeconds.contains(seconds) else {
                    throw fail("bucket \(bucket) has a rolling window of \(seconds) s, outside 1 s to 366 days")
                }
            case .hour, .minute: break
            }
        }
        for (bucket, pacing) in bucketPacing.sorted(by: { $0.key < $1.key }) {
            guard bucketLimits[bucket] != nil else { throw fail("bucket \(bucket) is paced but has no limit") }
            guard (0...1).contains(pacing.reserveFraction) else {
                throw fail("bucket \(bucket) keeps back \(pacing.reserveFraction), outside 0 to 1")
            }
        }
        for bucket in announcedLimits.keys.sorted() where bucketLimits[bucket] == nil {
            throw fail("bucket \(bucket) follows announced limits but has no limit")
        }
        for (endpoint, cost) in endpointCosts.sorted(by: { $0.key < $1.key }) {
            guard let actual = cost.actualCost else { continue }
            guard cost.charges.contains(where: { $0.bucket == actual.bucket ?? cost.bucket }) else {
                throw fail("\(endpoint) settles its actual cost in bucket \(actual.bucket ?? cost.bucket), which it is not charged in")
            }
        }
        if let percent = warningPercents.first(where: { !(1...100).contains($0) }) {
            throw fail("warning levels are percentages from 1 to 100, not \(percent)")
        }
    }
}
