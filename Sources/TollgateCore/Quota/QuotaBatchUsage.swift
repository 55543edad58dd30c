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
}
