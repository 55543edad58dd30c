/// Why a batch's answer could not be split into its callers' answers; each caller then sends its
/// own request.
enum BatchSplitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The body is not a JSON object.
    case notAJSONObject
    /// The object has no list of items under the policy's field.
    case noItemList(field: String)
    /// The body came in a `Content-Encoding` the gate cannot undo, or its bytes are not valid in
    /// it, or it would decode past ``ContentDecoding/defaultLimit``.
    case undecodableBody(contentEncoding: [String])

    var description: String {
        switch self {
        case .notAJSONObject: "the batch's answer is not a JSON object"
        case .noItemList(let field): "the batch's answer has no list of items in '\(field)'"
        case .undecodableBody(let codings):
            "the batch's answer could not be decoded from Content-Encoding '\(codings.joined(separator: ", "))'"
        }
    }
}
