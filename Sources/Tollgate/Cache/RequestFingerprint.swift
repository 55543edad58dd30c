import HTTPTypes

/// A request as the memo of cache keys holds it: hashed in bulk, a field's value as one run of
/// bytes, where `HTTPRequest`'s own hash feeds the hasher byte by byte; equal exactly when the
/// requests are equal and carry their fields in the same order (`HTTPRequest`'s equality lets
/// differently named fields come in another order: two such requests get two memo entries, each
/// with the same key).
///
/// The hash is worked out once, when the fingerprint is made: a key the memo does not know is
/// looked up and then inserted, and each would otherwise hash the whole request again.
struct RequestFingerprint: Hashable {
    let request: HTTPRequest
    private let requestHash: Int

    init(request: HTTPRequest) {
        self.request = request
        var hasher = Hasher()
        hasher.combine(request.method.rawValue)
        hasher.combine(request.scheme)
        hasher.combine(request.authority)
        hasher.combine(request.path)
        hasher.combine(request.headerFields.count)
        for field in request.headerFields {
            hasher.combine(field.name.canonicalName)
            field.withUnsafeBytesOfValue { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
        requestHash = hasher.finalize()
    }

    func hash(into hasher: inout Hasher) { hasher.combine(requestHash) }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.requestHash == rhs.requestHash && lhs.request == rhs.request }
}
