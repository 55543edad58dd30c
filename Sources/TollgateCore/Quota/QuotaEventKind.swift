/// What a `quota_events` row records; its raw value is the `kind` column, whose `CHECK` lists
/// the same seven.
public enum QuotaEventKind: String, Sendable, Hashable, CaseIterable {
    /// Units spent by an admitted attempt; its id is the reservation's.
    case charge
    /// A charge given back (a `304`, an attempt that never left the machine); negative units.
    case refund
    /// An operator's reset of a day, or a reconciliation that lowered it; negative or zero units.
    case reset
    /// The server said the bucket's daily quota is spent; zero units.
    case exhausted
    /// A bucket's daily limit was set or changed; zero units.
    case limit
    /// The server announced fewer units left than the ledger counted (`RateLimit`,
    /// `X-RateLimit-Remaining`…): the difference, charged to the endpoint `*`.
    case announced
    /// A charge's actual cost read from its answer (a body's `usage.total_tokens`, a header): the
    /// difference from the estimate charged on admission, positive or negative.
    case settle
}
