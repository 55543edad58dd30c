import Foundation
import HTTPTypes
import Tollgate

/// A client's own `If-None-Match` or `If-Modified-Since`, evaluated by the proxy on the answer it
/// is about to give (RFC 9111 §4.3.2: a cache answers a client's conditional request itself). The
/// gate answers such a request from what it holds as if it carried no conditions
/// (`GateRequestOptions.answersConditionalsFromStore`), or passes the conditions upstream when it
/// holds nothing; either way a `200` comes back, and the client, which holds that representation
/// (under its own links), is owed the `304`. Also the fields a `304` leaves out, and the tags a
/// rewriting proxy gives back upstream. Pure.
enum ClientConditional {
    /// Whether the answer goes to the client as `304 Not Modified`, on a `200` to a `GET` or `HEAD`:
    /// its `If-None-Match` is `*` or names the answer's entity tag (weak comparison, RFC 9110
    /// §13.1.2); or, without `If-None-Match`, its `If-Modified-Since` is a date no earlier than the
    /// answer's `Last-Modified`, or its `Date` when it has none (RFC 9111 §4.3.2; RFC 9110 §13.1.3:
    /// the field is ignored beside `If-None-Match`, or when either date is not one).
    /// - Parameters:
    ///   - method: The client's method.
    ///   - requestFields: The client's fields.
    ///   - status: The answer's status.
    ///   - responseFields: The answer's fields.
    /// - Returns: Whether to answer `304`.
    static func isNotModified(
        method: HTTPRequest.Method, requestFields: HTTPFields, status: HTTPResponse.Status, responseFields: HTTPFields
    ) -> Bool {
        guard method == .get || method == .head, status == .ok else { return false }
        return ConditionalRequest.holdsRepresentation(
            requestFields, tag: responseFields[.eTag], modified: responseFields[.lastModified] ?? responseFields[.date]
        )
    }

    /// Takes from a `304`'s fields what describes a body it does not carry (RFC 9110 §15.4.5: a
    /// `304` sends the validators, `Cache-Control`, `Expires`, `Vary`, `Content-Location` and
    /// `Date`, and no other representation metadata). A client's cache updates what it holds with
    /// the `304`'s fields, so the stored answer's `Content-Encoding: gzip`, after a `200` that went
    /// out decoded to rewrite its links, would have told it that its plain body is compressed.
    /// - Parameter fields: The answer's fields, about to go out with a `304`.
    static func removeRepresentationMetadata(from fields: inout HTTPFields) {
        for name in representationMetadata { fields[name] = nil }
    }

    /// Gives back the tags of `If-Match` and `If-Range` as the upstream wrote them, without `W/`,
    /// for a request through a proxy that rewrites bodies: it made the tags of rewritten bodies
    /// weak (`UpstreamLinkRewriter.rewriteBody`), and both fields compare strongly (RFC 9110
    /// §13.1.1, §13.1.5), where a weak tag never matches — a client's `PATCH` with the `If-Match`
    /// it was given would always have failed with `412`. A tag the upstream itself sent weak
    /// matches nothing there either way, so nothing that failed before succeeds by this.
    /// - Parameter fields: The request's fields, on their way upstream.
    static func restoreUpstreamTags(in fields: inout HTTPFields) {
        let values = fields[values: .ifMatch]
        if !values.isEmpty, !values.contains(where: { $0.trimmingCharacters(in: .whitespaces) == "*" }) {
            fields[.ifMatch] = values.flatMap(EntityTags.opaqueTags).joined(separator: ", ")
        }
        if let range = fields[.ifRange]?.trimmingCharacters(in: .whitespaces), range.hasPrefix("W/\"") {
            fields[.ifRange] = String(range.dropFirst(2))
        }
    }

    /// The fields ``removeRepresentationMetadata(from:)`` takes out.
    static let representationMetadata: [HTTPField.Name] = [
        .contentLength, .contentType, .contentEncoding, .contentLanguage, .contentRange, .acceptRanges,
    ] + UpstreamLinkRewriter.contentDigests
}
