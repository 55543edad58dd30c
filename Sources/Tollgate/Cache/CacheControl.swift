import HTTPTypes

/// The directives of `Cache-Control` fields, read leniently: unknown directives are ignored, and
/// a malformed value never fails, it only stops meaning anything.
struct CacheControl: Sendable, Hashable {
    /// Directive names (lowercased) and their values, unquoted; nil for a directive without one.
    let directives: [String: String?]

    init(_ fields: HTTPFields) {
        var directives: [String: String?] = [:]
        for value in fields[values: .cacheControl] {
            for directive in Self.splitOutsideQuotes(value) {
                let pair = directive.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = pair[0].trimmingCharacters(in: .whitespaces).lowercased()
                guard !name.isEmpty else { continue }
                var argument = pair.count == 2 ? pair[1].trimmingCharacters(in: .whitespaces) : nil
                if let quoted = argument, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                    argument = String(quoted.dropFirst().dropLast())
                }
                // The first occurrence wins, as RFC 9111 §4.2.1 suggests for conflicting max-age.
                if directives[name] == nil { directives[name] = .some(argument) }
            }
        }
        self.directives = directives
    }

    func contains(_ name: String) -> Bool { directives[name] != nil }

    /// `max-age`: seconds; nil when absent, and `.invalid` when present but not a number.
    var maxAge: DeltaSeconds? { deltaSeconds("max-age") }

    var noStore: Bool { contains("no-store") }
    var noCache: Bool { contains("no-cache") }

    enum DeltaSeconds: Sendable, Hashable {
        case seconds(Int64)
        case invalid
    }

    private func deltaSeconds(_ name: String) -> DeltaSeconds? {
        guard let entry = directives[name] else { return nil }
        guard let text = entry, !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return .invalid }
        // RFC 9111 §1.2.2: a number too large to represent means "a very long time".
        return .seconds(Int64(text) ?? Int64(Int32.max))
    }

    private static func splitOutsideQuotes(_ value: String) -> [Substring] {
        var parts: [Substring] = []
        var start = value.startIndex
        var inQuotes = false
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if character == "\"" {
                inQuotes.toggle()
            } else if character == "\\", inQuotes {
                index = value.index(after: index)
                if index == value.endIndex { break }
            } else if character == ",", !inQuotes {
                parts.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        parts.append(value[start...])
        return parts
    }
}
