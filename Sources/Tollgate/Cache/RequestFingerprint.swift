import HTTPTypes

/// A request as the memo of cache keys holds it: hashed in bulk, a field's value as one run of
/// bytes, where `HTTPRequest`'s own hash feeds the hasher byte by byte; equal exactly when the
/// requests are equal.
struct RequestFingerprint: Hashable {
    let request: HTTPRequest

    func hash(into hasher: inout Hasher) {
        hasher.combine(request.method.rawValue)
        hasher.combine(request.scheme)
        hasher.combine(request.authority)
        hasher.combine(request.path)
        hasher.combine(request.headerFields.count)
        for field in request.headerFields {
            hasher.combine(field.name.canonicalName)
            field.withUnsafeBytesOfValue { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.request == rhs.request }
}
