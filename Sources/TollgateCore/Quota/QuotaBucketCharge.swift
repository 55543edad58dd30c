/// A charge in one more bucket for the same call: see ``QuotaReservationRequest/additionalCharges``.
public struct QuotaBucketCharge: Sendable, Hashable {
    /// The bucket.
    public var bucket: String
    /// The units charged in it.
    public var cost: Int
    /// The bucket's configured daily limit.
    public var configuredLimit: Int
    /// The window the bucket's limit counts over: the Pacific day by default.
    public var window: QuotaWindow

    /// Creates a charge.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - cost: The units charged in it.
    ///   - configuredLimit: The bucket's configured daily limit.
    ///   - window: The window the bucket's limit counts over.
    public init(bucket: String, cost: Int, configuredLimit: Int, window: QuotaWindow = .pacificDay) {
        self.window = window
        self.bucket = bucket
        self.cost = cost
        self.configuredLimit = configuredLimit
    }
}
