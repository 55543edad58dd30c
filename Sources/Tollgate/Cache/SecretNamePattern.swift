/// A name pattern for header fields or query parameters that carry secrets: `*` stands for any
/// run of characters (`*-token`, `*auth*`, `x-my-*`); everything else matches itself, compared
/// case-insensitively. A pattern without `*` matches one name exactly.
public struct SecretNamePattern: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The pattern as written, lowercased.
    public let pattern: String
    /// The literal pieces between the `*`s.
    private let pieces: [Substring]

    /// Creates a pattern.
    /// - Parameter pattern: A name with any number of `*` wildcards.
    public init(_ pattern: String) {
        self.pattern = pattern.lowercased()
        self.pieces = self.pattern.split(separator: "*", omittingEmptySubsequences: false)
    }

    /// Creates a pattern from a literal, such as `"*-token"`.
    /// - Parameter value: A name with any number of `*` wildcards.
    public init(stringLiteral value: String) {
        self.init(value)
    }

    public var description: String { pattern }

    /// Whether `name` matches the pattern.
    /// - Parameter name: A header field name or a percent-decoded query parameter name.
    /// - Returns: True when the lowercased name matches.
    public func matches(_ name: some StringProtocol) -> Bool {
        Self.matches(lowercasedName: Substring(name.lowercased()), pieces: pieces)
    }

    /// Whether an already lowercased name matches, for callers that test many patterns.
    func matches(lowercasedName name: Substring) -> Bool {
        Self.matches(lowercasedName: name, pieces: pieces)
    }

    private static func matches(lowercasedName name: Substring, pieces: [Substring]) -> Bool {
        guard pieces.count > 1 else { return name == pieces[0] }
        // Anchored first and last pieces; the middle ones are found left to right, greedily from
        // the left, which is enough for `*` (it never needs to backtrack).
        guard name.hasPrefix(pieces[0]) else { return false }
        var rest = name.dropFirst(pieces[0].count)
        for middle in pieces.dropFirst().dropLast() where !middle.isEmpty {
            guard let found = rest.firstRange(of: middle) else { return false }
            rest = rest[found.upperBound...]
        }
        let last = pieces[pieces.count - 1]
        return rest.count >= last.count && rest.hasSuffix(last)
    }
}

extension Collection where Element == SecretNamePattern {
    /// Whether any pattern matches `name`.
    func anyMatches(_ name: some StringProtocol) -> Bool {
        let lowercased = Substring(name.lowercased())
        return contains { $0.matches(lowercasedName: lowercased) }
    }
}
