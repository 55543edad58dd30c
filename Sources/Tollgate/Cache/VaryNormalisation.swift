import Foundation

/// How request header values are normalised before they are compared for `Vary` (RFC 9111 §4.1):
/// whitespace is collapsed, and repeated lines are joined with `, ` (both keep the meaning); for
/// the content-negotiation lists whose members are case-insensitive and whose order carries no
/// meaning (preference is in the `q` weights), the members are also lowercased, stripped of the
/// optional whitespace around `;` and `=`, and sorted: `Accept-Encoding: br, GZIP` and
/// `accept-encoding: gzip,br` select the same stored variant.
enum VaryNormalisation {
    /// Fields whose value is an unordered list of case-insensitive members.
    static let unorderedCaseInsensitiveLists: Set<String> = ["accept-encoding", "accept-language", "accept-charset"]

    /// The normalised value of a field's lines.
    /// - Parameters:
    ///   - values: The request's lines of the field, in order.
    ///   - field: The lowercased field name.
    /// - Returns: One string that equal requests share.
    static func normalised(_ values: [String], field: String) -> String {
        let collapsed = values.map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
        guard unorderedCaseInsensitiveLists.contains(field) else { return collapsed.joined(separator: ", ") }
        let members = collapsed.flatMap { $0.split(separator: ",") }.map { member in
            member.split(separator: ";").map { parameter in
                parameter.split(separator: "=", omittingEmptySubsequences: false)
                    .map { $0.trimmingOptionalWhitespace }.joined(separator: "=")
            }.joined(separator: ";").lowercased()
        }.filter { !$0.isEmpty }
        return members.sorted().joined(separator: ", ")
    }
}
