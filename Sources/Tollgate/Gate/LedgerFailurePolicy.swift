/// What the gate does when its ledger cannot be written: the store operation that admits an
/// attempt (circuit, throttle, quota charge) or settles it (circuit outcome, refund) fails, because
/// the disk is full or the file became read-only, say.
///
/// A cache that cannot be read or written never fails a request whatever this policy says: only
/// the ledger, which is what stops a tool from overspending, is governed here.
public enum LedgerFailurePolicy: Sendable, Hashable {
    /// Refuse the request: the store's error reaches the caller and nothing is sent. The default,
    /// because overspending a quota is what Tollgate exists to prevent.
    case failClosed
    /// Send the request anyway, uncharged and unrecorded, and log a warning. For tools that would
    /// rather spend unaccounted quota than stop working while the file cannot be written.
    case failOpen
}
