/// A name pattern for header fields or query parameters that carry secrets: `*` stands for any
/// run of characters (`*-token`, `*auth*`, `x-my-*`); everything else matches itself, compared
/// case-insensitively. A pattern without `*` matches one name exactly.
public struct SecretNamePattern: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The pattern as written, lowercased.
    public let pattern: String
    /// The literal pieces between the `*`s, as UTF-8: matched byte by byte, since every request's
    /// cache key checks its header names against every pattern.
    private let pieces: [[UInt8]]

    /// Creates a pattern.
    /// - Parameter pattern: A name with any number of `*` wildcards.
    public init(_ pattern: String) {
        self.pattern = pattern.lowercased()
        self.pieces = self.pattern.split(separator: "*", omittingEmptySubsequences: false).map { Array($0.utf8) }
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
        matches(lowercasedBytes: Array(name.lowercased().utf8)[...])
    }

    /// Whether the UTF-8 bytes of an already lowercased name match.
    func matches(lowercasedBytes name: ArraySlice<UInt8>) -> Bool {
        guard pieces.count > 1 else { return name.elementsEqual(pieces[0]) }
        // Anchored first and last pieces; the middle ones are found left to right, greedily from
        // the left, which is enough for `*` (it never needs to backtrack).
        let first = pieces[0], last = pieces[pieces.count - 1]
        guard name.count >= first.count + last.count, name.starts(with: first) else { return false }
        var rest = name.dropFirst(first.count)
        for middle in pieces.dropFirst().dropLast() where !middle.isEmpty {
            guard let end = Self.endOfFirstOccurrence(of: middle, in: rest) else { return false }
            rest = rest[end...]
        }
        return rest.count >= last.count && rest.suffix(last.count).elementsEqual(last)
    }

    /// The index just past the first occurrence of `needle` in `haystack`: a plain scan, as names
    /// and pieces are a few bytes long.
    private static func endOfFirstOccurrence(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var start = haystack.startIndex
        while start + needle.count <= haystack.endIndex {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return start + needle.count }
            start += 1
        }
        return nil
    }
}

extension Collection where Element == SecretNamePattern {
    /// Whether any pattern matches `name`.
    func anyMatches(_ name: some StringProtocol) -> Bool {
        !isEmpty && anyMatches(lowercasedBytes: Array(name.lowercased().utf8)[...])
    }

    /// Whether any pattern matches the UTF-8 bytes of an already lowercased name.
    func anyMatches(lowercasedBytes name: ArraySlice<UInt8>) -> Bool {
        !isEmpty && contains { $0.matches(lowercasedBytes: name) }
    }
}
