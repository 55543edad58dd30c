import Foundation
import HTTPTypes

/// A request's own conditions, `If-None-Match` and `If-Modified-Since`, as RFC 9110 §13.1 reads
/// them: once for the cache's lookup, the proxy's answers to its clients and the replay's
/// recorded server.
package enum ConditionalRequest {
    /// The fields a `GET` carries its own conditions in.
    package static let fields: [HTTPField.Name] = [.ifNoneMatch, .ifModifiedSince]

    /// Whether `fields` carry a condition of their own.
    /// - Parameter fields: A request's fields.
    package static func isConditional(_ fields: HTTPFields) -> Bool {
        Self.fields.contains(where: fields.contains)
    }

    /// Whether a request's conditions say it already holds a representation: its `If-None-Match`
    /// is `*` or names `tag` (weak comparison, §13.1.2); or, without `If-None-Match`, its
    /// `If-Modified-Since` is a date no earlier than `modified` (§13.1.3: the field is ignored
    /// beside `If-None-Match`). A condition or a date that cannot be read does not hold.
    /// - Parameters:
    ///   - fields: The request's fields.
    ///   - tag: The representation's entity tag, if it has one.
    ///   - modified: When it last changed, as an HTTP date: its `Last-Modified` (a cache may
    ///     take its `Date` when it has none, RFC 9111 §4.3.2).
    /// - Returns: True when the answer is `304 Not Modified`.
    package static func holdsRepresentation(_ fields: HTTPFields, tag: String?, modified: String?) -> Bool {
        let conditions = fields[values: .ifNoneMatch]
        guard conditions.isEmpty else { return tag.map { EntityTags.ifNoneMatch(conditions, names: $0) } ?? false }
        guard let since = fields[.ifModifiedSince].flatMap({ HTTPDate.parse($0) }),
              let changed = modified.flatMap({ HTTPDate.parse($0) })
        else { return false }
        return changed <= since
    }
}
