import Foundation

/// gzip for the fake API's answers, when a behaviour asks for it: what a real server does for a
/// client that accepts it.
///
/// The stream stores the body in deflate's uncompressed blocks rather than compressing it: a
/// valid gzip stream (RFC 1952 over RFC 1951 §3.2.4) that every client must decode, written in
/// Swift alone, so the fake links no zlib (the benchmarks build it from its sources).
enum GzipEncoding {
    /// Whether an `Accept-Encoding` value lists gzip (with no `q=0`).
    static func accepts(_ acceptEncoding: String?) -> Bool {
        guard let acceptEncoding else { return false }
        return acceptEncoding.split(separator: ",").contains { coding in
            let parts = coding.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            return parts.first == "gzip" && !parts.dropFirst().contains { $0 == "q=0" || $0 == "q=0.0" || $0 == "q=0.000" }
        }
    }

    /// `data` as a gzip stream.
    static func gzipped(_ data: Data) -> Data {
        // Magic, deflate, no flags, no time, no extra flags, unknown system.
        var stream = Data([0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF])
        let bytes = [UInt8](data)
        var start = 0
        repeat {
            let length = min(65_535, bytes.count - start)
            let isLast = start + length == bytes.count
            stream.append(isLast ? 0x01 : 0x00)
            stream.append(littleEndian: UInt16(length))
            stream.append(littleEndian: ~UInt16(length))
            stream.append(contentsOf: bytes[start..<(start + length)])
            start += length
        } while start < bytes.count
        stream.append(littleEndian: crc32(bytes))
        stream.append(littleEndian: UInt32(truncatingIfNeeded: bytes.count))
        return stream
    }

    /// CRC-32 as gzip's trailer carries it (the reflected polynomial 0xEDB88320).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return ~crc
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }
}

private extension Data {
    mutating func append<Integer: FixedWidthInteger>(littleEndian value: Integer) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}
