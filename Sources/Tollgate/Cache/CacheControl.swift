import HTTPTypes
import Synchronization

/// The directives of `Cache-Control` fields (RFC 9111 §5.2), read strictly but never failing:
/// `cache-directive = token [ "=" ( token / quoted-string ) ]`, names case-insensitive, arguments
/// in either form (§5.2: recipients accept both). Unknown directives are kept and ignored. A
/// directive that repeats keeps every occurrence, so the most restrictive one can win (§4.2.1);
/// one whose argument is malformed (`max-age = 60`, `max-age=1.5`, an unterminated quote) is kept
/// as malformed, which makes a lifetime invalid, and an invalid lifetime means stale.
struct CacheControl: Sendable, Hashable {
    /// One occurrence's argument.
    enum Argument: Sendable, Hashable {
        /// The directive has no `=`.
        case none
        /// The argument, unquoted.
        case value(String)
        /// Something follows the name that is not `=` and a token or a quoted string.
        case malformed
    }

    /// Directive names (lowercased) and the arguments of their occurrences, in order.
    let directives: [String: [Argument]]

    init(_ fields: HTTPFields) {
        self.init(values: fields[values: .cacheControl])
    }

    init(values: [String]) {
        guard !values.isEmpty else {
            directives = [:]
            return
        }
        // A stored response's directives are read on every lookup and every revision, and a
        // server sends the same few values again and again: parsing them (building the
        // dictionary) was about 5 us of a 304's path in its profile; looking one up is a hash.
        let remembers = values.reduce(0) { $0 + $1.utf8.count } <= Self.longestRemembered
        if remembers, let known = Self.recentlyParsed.withLock({ $0[values] }) {
            self = known
            return
        }
        var directives: [String: [Argument]] = [:]
        for value in values {
            for element in Self.splitOutsideQuotes(Array(value.utf8)) {
                guard let (name, argument) = Self.directive(element) else { continue }
                directives[name, default: []].append(argument)
            }
        }
        self.directives = directives
        if remembers {
            Self.recentlyParsed.withLock { parsed in
                if parsed.count >= Self.rememberedCount { parsed.removeAll(keepingCapacity: true) }
                parsed[values] = self
            }
        }
    }

    /// Values parsed lately, for every cache in the process: at most ``rememberedCount`` values of
    /// at most ``longestRemembered`` bytes, so a server that varies its directives (or a hostile
    /// one) costs a parse, never memory.
    private static let recentlyParsed = Mutex<[[String]: CacheControl]>([:])
    private static let rememberedCount = 256
    private static let longestRemembered = 512

    func contains(_ name: String) -> Bool { directives[name] != nil }

    var noStore: Bool { contains("no-store") }
    /// `no-cache`, with or without field names: a private cache treats the qualified form like the
    /// plain one, so the named fields are never served without revalidation either.
    var noCache: Bool { contains("no-cache") }
    var mustRevalidate: Bool { contains("must-revalidate") }
    var proxyRevalidate: Bool { contains("proxy-revalidate") }
    var isPublic: Bool { contains("public") }
    var isPrivate: Bool { contains("private") }
    var onlyIfCached: Bool { contains("only-if-cached") }

    /// `max-age`: the lowest of its occurrences; `.invalid` when any occurrence is not a number.
    var maxAge: DeltaSeconds? { deltaSeconds("max-age") }
    /// `min-fresh` (requests).
    var minFresh: DeltaSeconds? { deltaSeconds("min-fresh") }
    /// `stale-if-error` (RFC 5861 §4).
    var staleIfError: DeltaSeconds? { deltaSeconds("stale-if-error") }
    /// `stale-while-revalidate` (RFC 5861 §3).
    var staleWhileRevalidate: DeltaSeconds? { deltaSeconds("stale-while-revalidate") }

    /// `max-stale` (requests): without an argument any staleness is accepted.
    var maxStale: MaxStale? {
        guard let arguments = directives["max-stale"] else { return nil }
        if arguments.contains(.none) { return .any }
        guard case .seconds(let seconds)? = deltaSeconds("max-stale") else { return .invalid }
        return .seconds(seconds)
    }

    enum DeltaSeconds: Sendable, Hashable {
        case seconds(Int64)
        case invalid

        /// The seconds, or nil when invalid.
        var value: Int64? { if case .seconds(let seconds) = self { seconds } else { nil } }
    }

    enum MaxStale: Sendable, Hashable {
        case any
        case seconds(Int64)
        case invalid
    }

    /// RFC 9111 §1.2.2: a delta-seconds too large to represent is 2^31.
    static let deltaSecondsCeiling: Int64 = 2_147_483_648

    private func deltaSeconds(_ name: String) -> DeltaSeconds? {
        guard let arguments = directives[name] else { return nil }
        var lowest: Int64?
        for argument in arguments {
            guard case .value(let text) = argument, let seconds = Self.deltaSeconds(text) else { return .invalid }
            lowest = min(lowest ?? seconds, seconds)
        }
        return lowest.map { .seconds($0) } ?? .invalid
    }

    /// `delta-seconds = 1*DIGIT`, leading zeros allowed, capped at 2^31.
    static func deltaSeconds(_ text: String) -> Int64? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            value = value * 10 + Int64(byte - 0x30)
            if value >= deltaSecondsCeiling { return deltaSecondsCeiling }
        }
        return value
    }

    // MARK: Grammar

    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        // RFC 9110 §5.6.2's tchar, spelled out rather than looked up in an array built per byte
        // (which, measured, cost nothing noticeable: the dictionary of directives is the parse's cost).
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// One list element: its lowercased name and its argument; nil when it does not start with a token.
    private static func directive(_ element: ArraySlice<UInt8>) -> (String, Argument)? {
        var bytes = element
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        let nameEnd = bytes.firstIndex(where: { !isTokenCharacter($0) }) ?? bytes.endIndex
        guard nameEnd > bytes.startIndex else { return nil }
        let name = String(decoding: bytes[..<nameEnd], as: UTF8.self).lowercased()
        let rest = bytes[nameEnd...]
        guard let first = rest.first else { return (name, .none) }
        guard first == UInt8(ascii: "=") else { return (name, .malformed) }
        let argument = rest.dropFirst()
        if argument.first == UInt8(ascii: "\"") {
            return (name, quotedString(argument).map(Argument.value) ?? .malformed)
        }
        guard !argument.isEmpty, argument.allSatisfy(isTokenCharacter) else { return (name, .malformed) }
        return (name, .value(String(decoding: argument, as: UTF8.self)))
    }

    /// The content of a quoted string that spans exactly `bytes`, with its escapes resolved.
    private static func quotedString(_ bytes: ArraySlice<UInt8>) -> String? {
        var content: [UInt8] = []
        var index = bytes.index(after: bytes.startIndex)
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") {
                index = bytes.index(after: index)
                guard index < bytes.endIndex else { return nil }
                content.append(bytes[index])
            } else if byte == UInt8(ascii: "\"") {
                return bytes.index(after: index) == bytes.endIndex ? String(decoding: content, as: UTF8.self) : nil
            } else {
                content.append(byte)
            }
            index = bytes.index(after: index)
        }
        return nil
    }

    /// The list elements of one field value: commas inside quoted strings do not separate.
    private static func splitOutsideQuotes(_ value: [UInt8]) -> [ArraySlice<UInt8>] {
        var parts: [ArraySlice<UInt8>] = []
        var start = 0
        var inQuotes = false
        var index = 0
        while index < value.count {
            let byte = value[index]
            if byte == UInt8(ascii: "\"") {
                inQuotes.toggle()
            } else if byte == UInt8(ascii: "\\"), inQuotes {
                index += 1
            } else if byte == UInt8(ascii: ","), !inQuotes {
                parts.append(value[start..<index])
                start = index + 1
            }
            index += 1
        }
        if start <= value.count { parts.append(value[min(start, value.count)...]) }
        return parts
    }
}
