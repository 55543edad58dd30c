import Foundation

/// What a quota reservation asks the store to charge.
///
/// The caller (the quota ledger) has already looked the endpoint up in its cost table; the store
/// only checks the bucket's budget and charges it.
public struct QuotaReservationRequest: Sendable, Hashable {
    /// The bucket the units come out of, such as `youtube`.
    public var bucket: String
    /// The endpoint being called, such as `search.list`: usage is kept per endpoint.
    public var endpoint: String
    /// The units to charge; zero or more.
    public var cost: Int
    /// The bucket's daily limit in the caller's configuration. It applies unless an operator set
    /// the limit (see ``QuotaBucketStatus/LimitSource``).
    public var configuredLimit: Int
    /// Usage levels, in percent of the limit, at which the caller wants to be told once a day that
    /// the bucket crossed them, such as `[80, 95]`.
    public var warningPercents: [Int]
    /// The time of the reservation: its Pacific day is the day charged.
    public var at: Date
    /// More buckets the same call is charged in, all or nothing with ``bucket`` (an API that
    /// meters one call in several quotas). A refund of the reservation refunds them too.
    public var additionalCharges: [QuotaBucketCharge]
    /// The window ``bucket``'s limit counts over: the Pacific day by default.
    public var window: QuotaWindow
    /// How ``bucket`` spends its last units, if it paces them.
    public var pacing: QuotaPacing?
    /// What the charge's event says about the call, such as `batch of 50 IDs`; nil says nothing.
    public var detail: String?

    /// Creates a request.
    /// - Parameters:
    ///   - bucket: The bucket to charge.
    ///   - endpoint: The endpoint being called.
    ///   - cost: The units to charge; zero or more.
    ///   - configuredLimit: The bucket's daily limit in the caller's configuration.
    ///   - warningPercents: Usage levels to report once a day when crossed.
    ///   - at: The time of the reservation.
    ///   - additionalCharges: More buckets charged for the same call, all or nothing.
    ///   - window: The window the bucket's limit counts over.
    ///   - pacing: How the bucket spends its last units, if it paces them.
    public init(
        bucket: String, endpoint: String, cost: Int, configuredLimit: Int, warningPercents: [Int] = [], at: Date,
        additionalCharges: [QuotaBucketCharge] = [], window: QuotaWindow = .pacificDay, pacing: QuotaPacing? = nil
    ) {
        self.window = window
        self.pacing = pacing
        self.bucket = bucket
        self.endpoint = endpoint
        self.cost = cost
        self.configuredLimit = configuredLimit
        self.warningPercents = warningPercents
        self.at = at
        self.additionalCharges = additionalCharges
    }
}
