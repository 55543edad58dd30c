/// Why a batch's answer could not be split into its callers' answers; each caller then sends its
/// own request.
enum BatchSplitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The body is not a JSON object.
    case notAJSONObject
    /// The object has no list of items under the policy's field.
    case noItemList(field: String)

    var description: String {
        switch self {
        case .notAJSONObject: "the batch's answer is not a JSON object"
        case .noItemList(let field): "the batch's answer has no list of items in '\(field)'"
        }
    }
}
