import Foundation

/// Entity tags as RFC 9110 §8.8.3 writes them, read once for the cache, the proxy's answers to its
/// clients' conditional requests and the replay of recorded traffic.
package enum EntityTags {
    /// Weak comparison of two entity tags (RFC 9110 §8.8.3.2): equal opaque tags, `W/` or not.
    /// - Parameters:
    ///   - first: An entity tag, as a field carries it.
    ///   - second: Another.
    package static func weaklyMatch(_ first: String, _ second: String) -> Bool {
        func opaque(_ tag: String) -> Substring {
            let trimmed = tag.trimmingOptionalWhitespace
            return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed
        }
        return opaque(first) == opaque(second)
    }

    /// The opaque tags (`"…"`, without `W/`) of a list of entity tags, in order; a tag not closed
    /// ends the list. A comma inside a tag's quotes is part of the tag.
    /// - Parameter value: A field value such as `If-None-Match`'s.
    package static func opaqueTags(_ value: String) -> [Substring] {
        var tags: [Substring] = []
        var rest = value[...]
        while let open = rest.firstIndex(of: "\"") {
            let after = rest.index(after: open)
            guard let close = rest[after...].firstIndex(of: "\"") else { break }
            tags.append(rest[open...close])
            rest = rest[rest.index(after: close)...]
        }
        return tags
    }

    /// Whether `If-None-Match` names `etag` (RFC 9110 §13.1.2): `*`, or a tag weakly equal to it.
    /// - Parameters:
    ///   - conditions: The request's `If-None-Match` field values.
    ///   - etag: The representation's current entity tag.
    package static func ifNoneMatch(_ conditions: [String], names etag: String) -> Bool {
        guard let current = opaqueTags(etag).first else { return false }
        return conditions.contains { value in
            value.trimmingOptionalWhitespace == "*" || opaqueTags(value).contains(current)
        }
    }
}
