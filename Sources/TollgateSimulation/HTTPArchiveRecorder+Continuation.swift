import Foundation

extension HTTPArchiveRecorder {
    /// What starts every file the recorder writes: the archive's head, up to its entries.
    static let head: Data = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Two plain strings: encoding them cannot fail.
        let creator = (try? encoder.encode(HTTPArchive.Creator(name: "tollgate proxy --record", version: "1"))) ?? Data()
        return Data(#"{"log": {"version": "1.2", "creator": "#.utf8) + creator + Data(#", "entries": ["#.utf8)
    }()

    /// The end the recorder writes when it is closed.
    static let end = Data("\n]}}\n".utf8)

    /// The whole part of a file the recorder wrote, whether or not it was closed: its head and
    /// every entry whose line is whole, without the end. A proxy killed (`kill -9`, a crash, a
    /// machine that lost power) leaves its file without the end, and perhaps with a last entry
    /// cut short; every entry before it is one whole line of JSON (the encoder escapes line feeds
    /// inside strings), so what it recorded up to then is kept.
    /// - Parameter data: The file's bytes.
    /// - Returns: The length of the whole part, the number of whole entries and whether the file
    ///   ended as a closed recording does; nil when the file is not one the recorder wrote.
    static func wholePart(of data: Data) -> (length: Int, entries: Int, isClosed: Bool)? {
        guard data.starts(with: head) else { return nil }
        let (lineFeed, comma) = (UInt8(ascii: "\n"), UInt8(ascii: ","))
        var position = data.startIndex + head.count
        var entries = 0
        while true {
            let rest = data[position...]
            if rest.isEmpty || rest.elementsEqual(end) {
                return (position - data.startIndex, entries, !rest.isEmpty)
            }
            // An entry: a line feed before the first, a comma and a line feed before the others,
            // then one line of JSON.
            let separator = entries == 0 ? [lineFeed] : [comma, lineFeed]
            guard rest.starts(with: separator) else { break }
            let textStart = position + separator.count
            let lineEnd = data[textStart...].firstIndex(of: lineFeed) ?? data.endIndex
            // The comma that ends the line is the next entry's separator.
            let textEnd = lineEnd > textStart && data[lineEnd - 1] == comma ? lineEnd - 1 : lineEnd
            guard (try? JSONSerialization.jsonObject(with: Data(data[textStart..<textEnd]))) is [String: Any] else { break }
            entries += 1
            position = textEnd
        }
        return (position - data.startIndex, entries, false)
    }
}
