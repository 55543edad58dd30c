import Foundation

extension Data {
    /// Whether the UTF-8 bytes of `needle` occur in the data: `memchr` to each place its first byte
    /// occurs, then `memcmp`. Foundation's `range(of:)` on Linux costs about 1.5 ns a byte, 15 µs
    /// for a 10 KiB body (measured), a quarter of a whole store; this is a fraction of that.
    /// - Parameter needle: The text to find; an empty one is never found.
    /// - Returns: True when it occurs.
    func containsUTF8(of needle: String) -> Bool {
        var needle = needle
        return needle.withUTF8 { needle -> Bool in
            withUnsafeBytes { (haystack: UnsafeRawBufferPointer) -> Bool in
                guard let first = needle.first, let needleBase = needle.baseAddress, let base = haystack.baseAddress,
                      haystack.count >= needle.count else { return false }
                let lastStart = haystack.count - needle.count
                var offset = 0
                while offset <= lastStart {
                    guard let hit = memchr(base + offset, Int32(first), lastStart - offset + 1) else { return false }
                    if memcmp(hit, needleBase, needle.count) == 0 { return true }
                    offset = base.distance(to: UnsafeRawPointer(hit)) + 1
                }
                return false
            }
        }
    }
}
