import CZlib
import Foundation

/// gzip for the fake API's answers, when a behaviour asks for it: what a real server does for a
/// client that accepts it.
enum GzipEncoding {
    /// Whether an `Accept-Encoding` value lists gzip (with no `q=0`).
    static func accepts(_ acceptEncoding: String?) -> Bool {
        guard let acceptEncoding else { return false }
        return acceptEncoding.split(separator: ",").contains { coding in
            let parts = coding.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            return parts.first == "gzip" && !parts.dropFirst().contains { $0 == "q=0" || $0 == "q=0.0" || $0 == "q=0.000" }
        }
    }

    /// `data` as a gzip stream; nil when zlib refuses.
    static func gzipped(_ data: Data) -> Data? {
        var stream = z_stream()
        guard _tollgate_deflate_init(&stream, Z_DEFAULT_COMPRESSION, 15 + 16) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        var input = [UInt8](data)
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        let status = input.withUnsafeMutableBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                stream.next_in = input.baseAddress
                stream.avail_in = uInt(input.count)
                stream.next_out = output.baseAddress
                stream.avail_out = uInt(output.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        return Data(output[0..<Int(stream.total_out)])
    }
}
