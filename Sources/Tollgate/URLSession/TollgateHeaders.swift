import HTTPTypes

/// The fields the gate's adapters add to an answer: the `tollgate proxy`'s and the `URLSession`
/// drop-in's answers carry the same three.
public enum TollgateHeaders {
    /// Where the answer came from, as ``ResponseSource``'s description writes it: `network`, `cache`,
    /// `revalidated`, `coalesced`, `stale (circuitOpen)`…
    public static let source = HTTPField.Name("X-Tollgate-Source")!
    /// The quota units the request cost, net of refunds.
    public static let units = HTTPField.Name("X-Tollgate-Units")!
    /// The endpoint name the request was charged to.
    public static let endpoint = HTTPField.Name("X-Tollgate-Endpoint")!
}
