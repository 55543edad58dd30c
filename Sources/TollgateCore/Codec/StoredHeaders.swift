import Foundation

/// The stored-header codec: how both stores keep a response's header fields in one text column
/// (`cache_entries.headers`), the one copy of it.
///
/// The text is for people as much as for the library: `name: value` lines that `sqlite3` and
/// `psql` show as they are. Reading works on UTF-8 bytes, so `"\r\n"` (one `Character` in Swift)
/// ends a line exactly as `"\n"` does.
public enum StoredHeaders {
    /// Header fields as `sqlite3` and `psql` users read them: one `name: value` per line. HTTP field values
    /// cannot hold line breaks; any that arrive anyway become spaces so one field stays one line.
    /// - Parameter headers: The fields, in order.
    /// - Returns: The text to store.
    public static func encode(_ headers: [CacheHeaderField]) -> String {
        var text = ""
        text.reserveCapacity(headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 3 })
        for (index, field) in headers.enumerated() {
            if index > 0 { text += "\n" }
            text += singleLine(field.name)
            text += ": "
            text += singleLine(field.value)
        }
        return text
    }

    /// Reads ``encode(_:)``'s text back; lines without a `: ` separator are skipped, and a line
    /// ending in `\r` (a file edited with CRLF line ends) is read without it.
    /// - Parameter text: The stored text.
    /// - Returns: The fields, in order.
    ///
    /// On UTF-8 bytes: splitting into `Character`s and searching with Foundation was most of the
    /// Swift in a revision's write (every candidate row is decoded).
    public static func decode(_ text: String) -> [CacheHeaderField] {
        var text = text
        return text.withUTF8 { bytes in
            var fields: [CacheHeaderField] = []
            var lineStart = 0
            while lineStart < bytes.count {
                var lineEnd = lineStart
                while lineEnd < bytes.count, bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
                let next = lineEnd + 1
                if lineEnd > lineStart, bytes[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
                if let field = field(in: UnsafeBufferPointer(rebasing: bytes[lineStart..<lineEnd])) {
                    fields.append(field)
                }
                lineStart = next
            }
            return fields
        }
    }

    /// One `name: value` line, or `name:` with an empty value; nil for an empty line or one
    /// without the separator.
    private static func field(in line: UnsafeBufferPointer<UInt8>) -> CacheHeaderField? {
        guard !line.isEmpty else { return nil }
        var colon = 0
        while colon + 1 < line.count {
            if line[colon] == UInt8(ascii: ":"), line[colon + 1] == UInt8(ascii: " ") {
                return CacheHeaderField(name: String(decoding: UnsafeBufferPointer(rebasing: line[..<colon]), as: UTF8.self),
                                        value: String(decoding: UnsafeBufferPointer(rebasing: line[(colon + 2)...]),
                                                      as: UTF8.self))
            }
            colon += 1
        }
        guard line[line.count - 1] == UInt8(ascii: ":") else { return nil }
        return CacheHeaderField(name: String(decoding: UnsafeBufferPointer(rebasing: line.dropLast()), as: UTF8.self),
                                value: "")
    }

    private static func singleLine(_ text: String) -> String {
        // Checked on bytes first: walking Characters (grapheme breaking) for every stored field
        // showed in a store's profile, and almost no value holds a line break.
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) else { return text }
        return String(text.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" ? " " : $0 })
    }
}
