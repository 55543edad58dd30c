import HTTPTypes

extension UpstreamLinkRewriter {
    /// `Link` (RFC 8288).
    static let link = HTTPField.Name("Link")!

    /// Rewrites `Link`, `Location` and `Content-Location` in place, field by field; any other field,
    /// and a field with nothing to rewrite, keeps its bytes.
    /// - Parameter fields: An answer's fields.
    func rewriteFields(_ fields: inout HTTPFields) {
        for index in fields.indices {
            let field = fields[index]
            let rewritten: [UInt8]?
            switch field.name {
            case Self.link: rewritten = rewrittenLinkValue(field.withUnsafeBytesOfValue { Array($0) })
            case .location, .contentLocation: rewritten = proxied(Self.trimmed(field.withUnsafeBytesOfValue { Array($0) }), .header)
            default: continue
            }
            if let rewritten { fields[index] = HTTPField(name: field.name, value: rewritten) }
        }
    }

    /// A `Link` field's value with every URI reference in it pointed at the proxy — each target
    /// (`<…>`) and each `anchor` parameter — or nil when none changes. Quoted strings are skipped as
    /// units (a `<` in a `title` is text), and all other bytes are kept as they are.
    /// - Parameter value: The field's value: one or more comma-separated links.
    /// - Returns: The new value, or nil.
    func rewrittenLinkValue(_ value: [UInt8]) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(value.count)
        var changed = false
        var index = 0
        /// The name of the parameter being read after a `;`, until its `=`.
        var parameter: [UInt8]?
        var valueOfAnchor = false
        while index < value.count {
            let byte = value[index]
            switch byte {
            case UInt8(ascii: "\""):
                let end = Self.quotedStringEnd(value, from: index)
                let contents = value[(index + 1)..<max(index + 1, end - 1)]
                if valueOfAnchor, end <= value.count, value[end - 1] == UInt8(ascii: "\""),
                   !contents.contains(UInt8(ascii: "\\")), let target = proxied(contents, .header) {
                    output += [UInt8(ascii: "\"")] + target + [UInt8(ascii: "\"")]
                    changed = true
                } else {
                    output += value[index..<end]
                }
                index = end
                valueOfAnchor = false
                parameter = nil
                continue
            case UInt8(ascii: "<") where parameter == nil && !valueOfAnchor:
                guard let close = value[index...].firstIndex(of: UInt8(ascii: ">")) else {
                    output += value[index...]
                    index = value.count
                    continue
                }
                if let target = proxied(value[(index + 1)..<close], .header) {
                    output += [UInt8(ascii: "<")] + target + [UInt8(ascii: ">")]
                    changed = true
                } else {
                    output += value[index...close]
                }
                index = close + 1
                continue
            case UInt8(ascii: ";"):
                parameter = []
                valueOfAnchor = false
            case UInt8(ascii: ","):
                parameter = nil
                valueOfAnchor = false
            case UInt8(ascii: "="):
                if let name = parameter { valueOfAnchor = name.map(Self.lowercased) == Array("anchor".utf8) }
                parameter = nil
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                break
            default:
                if valueOfAnchor {
                    // An anchor written as a token: up to the next separator.
                    let end = value[index...].firstIndex { [UInt8(ascii: ";"), UInt8(ascii: ","), UInt8(ascii: " "),
                                                            UInt8(ascii: "\t")].contains($0) } ?? value.count
                    if let target = proxied(value[index..<end], .header) {
                        output += target
                        changed = true
                    } else {
                        output += value[index..<end]
                    }
                    index = end
                    valueOfAnchor = false
                    continue
                }
                parameter?.append(byte)
            }
            output.append(byte)
            index += 1
        }
        return changed ? output : nil
    }

    /// The index just past the quoted string that starts at `start` (its closing `"`), or the
    /// value's end when it is not closed; `\` escapes the byte after it (RFC 9110 §5.6.4).
    static func quotedStringEnd(_ value: [UInt8], from start: Int) -> Int {
        var index = start + 1
        while index < value.count {
            switch value[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return value.count
    }

    /// `bytes` without leading and trailing spaces and tabs.
    static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return [] }
        return bytes[first...last]
    }
}
