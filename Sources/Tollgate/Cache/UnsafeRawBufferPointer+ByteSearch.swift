import Foundation

extension UnsafeRawBufferPointer {
    /// Whether `needle`'s bytes occur in these: `memchr` to each place its first byte occurs, then
    /// `memcmp`. Foundation's `range(of:)` on Linux costs about 1.5 ns a byte, 15 µs for a 10 KiB
    /// body (measured), a quarter of a whole store; the standard library's generic search is no
    /// better. An empty needle is never found.
    /// - Parameter needle: The bytes to find.
    /// - Returns: True when they occur.
    func containsBytes(_ needle: UnsafeRawBufferPointer) -> Bool {
        guard let first = needle.first, let needleBase = needle.baseAddress, let base = baseAddress,
              count >= needle.count else { return false }
        let lastStart = count - needle.count
        var offset = 0
        while offset <= lastStart {
            guard let hit = memchr(base + offset, Int32(first), lastStart - offset + 1) else { return false }
            if memcmp(hit, needleBase, needle.count) == 0 { return true }
            offset = base.distance(to: UnsafeRawPointer(hit)) + 1
        }
        return false
    }
}

extension Data {
    /// Whether the UTF-8 bytes of `needle` occur in the data (``UnsafeRawBufferPointer/containsBytes(_:)``).
    /// - Parameter needle: The text to find; an empty one is never found.
    /// - Returns: True when it occurs.
    func containsUTF8(of needle: String) -> Bool {
        var needle = needle
        return needle.withUTF8 { needle in
            withUnsafeBytes { $0.containsBytes(UnsafeRawBufferPointer(needle)) }
        }
    }
}
