/// How many of an endpoint's charged calls on one Pacific day carried a batch of single-ID
/// requests, and how many IDs they carried: read from the `charge` events of `quota_events`,
/// whose detail says `batch of N IDs` (``QuotaRules/batchDetail(ids:)``).
public struct QuotaBatchUsage: Sendable, Hashable {
    /// The Pacific day.
    public var day: PacificDay
    /// The bucket charged.
    public var bucket: String
    /// The endpoint.
    public var endpoint: String
    /// Charged calls that carried a batch.
    public var batches: Int
    /// IDs those calls carried, together.
    public var ids: Int

    /// Creates a row.
    /// - Parameters:
    ///   - day: The Pacific day.
    ///   - bucket: The bucket.
    ///   - endpoint: The endpoint.
    ///   - batches: Charged calls that carried a batch.
    ///   - ids: IDs they carried.
    public init(day: PacificDay, bucket: String, endpoint: String, batches: Int, ids: Int) {
        self.day = day
        self.bucket = bucket
        self.endpoint = endpoint
        self.batches = batches
        self.ids = ids
    }

    /// Folds a day's batch charges, counted per bucket, endpoint and detail as a store reads them,
    /// into one row per bucket and endpoint, ordered by both; a detail ``QuotaRules/batchIDs(inDetail:)``
    /// does not read as a batch's is left out. The stores count; the format is read here only.
    /// - Parameters:
    ///   - day: The Pacific day.
    ///   - charges: Each bucket, endpoint and detail with how many charges said it.
    /// - Returns: The rows.
    public static func tally(
        on day: PacificDay, _ charges: [(bucket: String, endpoint: String, detail: String, count: Int)]
    ) -> [QuotaBatchUsage] {
        var rows: [String: [String: QuotaBatchUsage]] = [:]
        for charge in charges {
            guard let ids = QuotaRules.batchIDs(inDetail: charge.detail) else { continue }
            rows[charge.bucket, default: [:]][charge.endpoint, default: QuotaBatchUsage(
                day: day, bucket: charge.bucket, endpoint: charge.endpoint, batches: 0, ids: 0
            )].add(batches: charge.count, ids: ids * charge.count)
        }
        return rows.keys.sorted().flatMap { bucket in
            rows[bucket, default: [:]].keys.sorted().compactMap { rows[bucket]?[$0] }
        }
    }

    private mutating func add(batches: Int, ids: Int) {
        self.batches += batches
        self.ids += ids
    }
}
