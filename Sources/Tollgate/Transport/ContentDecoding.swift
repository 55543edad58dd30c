import CZlib
import Foundation
import HTTPTypes
#if canImport(CBrotli)
import CBrotli
#endif

/// Undoes an answer's `Content-Encoding` so that what the gate reads in a body (an actual cost)
/// is read from the bytes the server meant, not from their compressed form.
///
/// gzip, deflate (zlib-wrapped or raw, as servers send both) and, where the system's brotli
/// decoder is linked (Linux), br. The output is bounded: a body that would inflate past the limit
/// is not decoded (a "zip bomb" of a few kilobytes cannot take the process's memory).
public enum ContentDecoding {
    /// The largest decoded body, in bytes, unless the caller says otherwise: 16 MiB.
    public static let defaultLimit = 16 * 1024 * 1024

    /// The codings ``decoded(_:fields:limit:)`` can undo, as a client's `Accept-Encoding` would list them.
    public static var supportedCodings: [String] {
        #if canImport(CBrotli)
        ["gzip", "deflate", "br"]
        #else
        ["gzip", "deflate"]
        #endif
    }

    /// Leaves in a request's `Accept-Encoding` only the codings in `supported` (and `identity`),
    /// or removes the field when none is: where the gate must read a body (a cost in it, a batch
    /// to split), the answer must come in a coding it can undo. q-values are kept as the client
    /// wrote them.
    /// - Parameters:
    ///   - fields: A request's fields.
    ///   - supported: The codings to keep, lowercased; ``supportedCodings`` by default.
    public static func limitAcceptEncoding(_ fields: inout HTTPFields, to supported: [String] = supportedCodings) {
        let offered = fields[values: .acceptEncoding].flatMap { $0.split(separator: ",") }
        guard !offered.isEmpty else { return }
        let kept = offered.map { $0.trimmingCharacters(in: .whitespaces) }.filter { coding in
            let name = coding.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
            return supported.contains(name) || name == "identity"
        }
        fields[.acceptEncoding] = nil
        if !kept.isEmpty { fields[.acceptEncoding] = kept.joined(separator: ", ") }
    }

    /// `body` with the answer's `Content-Encoding` undone; `body` itself when it has none (or
    /// `identity`); nil when a coding is not one this build can undo, the bytes are not valid in
    /// it, or the decoded body would pass `limit`.
    /// - Parameters:
    ///   - body: The body as it came.
    ///   - fields: The answer's fields.
    ///   - limit: The largest decoded body, in bytes.
    /// - Returns: The decoded body, or nil.
    public static func decoded(_ body: Data, fields: HTTPFields, limit: Int = defaultLimit) -> Data? {
        let codings = codings(of: fields)
        var decoded = body
        // Codings are listed in the order they were applied: undo the last first.
        for coding in codings.reversed() {
            switch coding {
            case "gzip", "x-gzip", "deflate":
                guard let inflated = inflate(decoded, limit: limit) else { return nil }
                decoded = inflated
            case "br":
                guard let unbrotlied = brotli(decoded, limit: limit) else { return nil }
                decoded = unbrotlied
            default:
                return nil
            }
        }
        return decoded
    }

    /// Whether the answer's body is in codings ``decoded(_:fields:limit:)`` undoes (or none), so
    /// that it can be read as the server meant it, within the limit.
    /// - Parameter fields: The answer's fields.
    /// - Returns: True when every coding can be undone.
    public static func canUndo(_ fields: HTTPFields) -> Bool {
        codings(of: fields).allSatisfy { undoable.contains($0) }
    }

    /// Whether the answer names any coding but `identity`.
    /// - Parameter fields: The answer's fields.
    /// - Returns: True when its body is encoded.
    public static func isEncoded(_ fields: HTTPFields) -> Bool {
        !codings(of: fields).isEmpty
    }

    /// The codings `decoded` knows, as `Content-Encoding` names them.
    private static var undoable: Set<String> { Set(supportedCodings + ["x-gzip"]) }

    /// The codings an answer's `Content-Encoding` lists, lowercased, `identity` left out, in the
    /// order they were applied.
    private static func codings(of fields: HTTPFields) -> [String] {
        fields[values: .contentEncoding]
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
    }

    /// Inflates gzip or zlib data, else raw deflate.
    static func inflate(_ data: Data, limit: Int) -> Data? {
        inflate(data, windowBits: 15 + 32, limit: limit) ?? inflate(data, windowBits: -15, limit: limit)
    }

    private static func inflate(_ data: Data, windowBits: Int32, limit: Int) -> Data? {
        var stream = z_stream()
        guard _tollgate_inflate_init(&stream, windowBits) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = [UInt8](data)
        return input.withUnsafeMutableBufferPointer { input -> Data? in
            stream.next_in = input.baseAddress
            stream.avail_in = uInt(input.count)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { chunk -> (Int32, Int) in
                    stream.next_out = chunk.baseAddress
                    stream.avail_out = uInt(chunk.count)
                    let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return (status, chunk.count - Int(stream.avail_out))
                }
                guard status == Z_OK || status == Z_STREAM_END || (status == Z_BUF_ERROR && produced > 0) else {
                    return nil
                }
                guard output.count + produced <= limit else { return nil }
                output.append(contentsOf: chunk[0..<produced])
                if status == Z_STREAM_END {
                    if stream.avail_in == 0 { return output }
                    // Another gzip member follows (RFC 1952 §2.2): decoded on, not dropped. Bytes
                    // that are not one fail below, and the body counts as undecodable.
                    guard inflateReset(&stream) == Z_OK else { return nil }
                }
                // Input spent without the stream's end: the body is truncated.
                if stream.avail_in == 0, produced == 0 { return nil }
            }
        }
    }

    private static func brotli(_ data: Data, limit: Int) -> Data? {
        #if canImport(CBrotli)
        guard let state = BrotliDecoderCreateInstance(nil, nil, nil) else { return nil }
        defer { BrotliDecoderDestroyInstance(state) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let input = [UInt8](data)
        return input.withUnsafeBufferPointer { input -> Data? in
            var availableIn = input.count
            var nextIn = input.baseAddress
            while true {
                let (result, produced) = chunk.withUnsafeMutableBufferPointer { chunk -> (BrotliDecoderResult, Int) in
                    var availableOut = chunk.count
                    var nextOut = chunk.baseAddress
                    let result = BrotliDecoderDecompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
                    return (result, chunk.count - availableOut)
                }
                guard output.count + produced <= limit else { return nil }
                output.append(contentsOf: chunk[0..<produced])
                switch result {
                case BROTLI_DECODER_RESULT_SUCCESS: return output
                case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: continue
                default: return nil
                }
            }
        }
        #else
        return nil
        #endif
    }
}
