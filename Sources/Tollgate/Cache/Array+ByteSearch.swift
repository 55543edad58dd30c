extension Array where Element == UInt8 {
    /// Where `needle` first occurs in these bytes at or after `start`, by a plain scan: on Linux
    /// the standard library's generic `firstRange(of:)` and Foundation's string search cost
    /// microseconds on the paths that call this (a store's header redaction, every request's
    /// batch share), measured. Nil when it does not occur, or when `needle` is empty.
    /// - Parameters:
    ///   - needle: The bytes to find.
    ///   - start: The first index a match may start at.
    func firstIndex(ofBytes needle: [UInt8], from start: Int = 0) -> Int? {
        guard let first = needle.first, count >= needle.count, start <= count - needle.count else { return nil }
        var index = Swift.max(start, 0)
        while index + needle.count <= count {
            if self[index] == first, self[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
