/// Escapes text for HTML element content and double-quoted attribute values: endpoint and bucket
/// names come from callers and the store, never trusted as markup.
enum HTMLText {
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default:
                // Control characters have no business in a page; show them as the replacement character.
                if character.value < 0x20 && character != "\t" { escaped += "\u{FFFD}" } else { escaped.unicodeScalars.append(character) }
            }
        }
        return escaped
    }

    /// A number as an SVG coordinate: at most one decimal, no exponent.
    static func coordinate(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    /// An integer with thousands separators: 10,000.
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result += "," }
            result.append(digit)
        }
        return (value < 0 ? "-" : "") + result
    }
}
