/// A charge in one more bucket for the same call: see ``QuotaReservationRequest/additionalCharges``.
public struct QuotaBucketCharge: Sendable, Hashable {
    /// The bucket.
    public var bucket: String
    /// The units charged in it.
    public var cost: Int
    /// The bucket's configured daily limit.
    public var configuredLimit: Int

    /// Creates a charge.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - cost: The units charged in it.
    ///   - configuredLimit: The bucket's configured daily limit.
    public init(bucket: String, cost: Int, configuredLimit: Int) {
        self.bucket = bucket
        self.cost = cost
        self.configuredLimit = configuredLimit
    }
}
