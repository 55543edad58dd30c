import Foundation
import HTTPTypes
import Tollgate

extension UpstreamLinkRewriter {
    /// Rewrites a body the client is about to get, when its media type is one of `mediaTypes` and
    /// it is held whole: the answer's status is not `206` (a part of a representation cannot be
    /// rewritten), and its `Content-Encoding` is none, or codings the gate can undo (gzip, deflate,
    /// br: `ContentDecoding`). A compressed body with a URL to rewrite goes out decoded, its
    /// `Content-Encoding` removed: api.github.com compresses whenever asked, and every client that
    /// asks does (PyGithub, through `requests`), so leaving compressed bodies alone left most of
    /// their links pointing past the gate. A client that asked for a coding takes `identity` too,
    /// unless it refused it outright (`identity;q=0`), which no client of these APIs does. One
    /// with nothing to rewrite passes compressed, as the upstream sent it. The stored body is never touched —
    /// this runs on the copy going out — so one cache entry serves clients that reached the proxy
    /// under different names, each getting its own.
    ///
    /// The answer's `ETag` stays the upstream's tag, made weak (`W/`) when it was strong, as nginx's
    /// `sub_filter` does: a strong tag promises these very bytes (a `Range` or `If-Range` relies on
    /// it), and the client's are not the upstream's. A client's `If-None-Match` with it matches,
    /// weakly (RFC 9110 §13.1.2), the stored answer's tag in the proxy, or the upstream's tag when
    /// the conditions go upstream, and the `304` it earns tells the client to use what it holds —
    /// the rewritten body it got under the same URL, host included.
    /// `Accept-Ranges` and digests of the content (`Content-Digest`, `Repr-Digest`, `Digest`,
    /// `Content-MD5`) no longer hold and are removed. `Content-Length` is the new body's (the
    /// responder drops the upstream's).
    /// - Parameters:
    ///   - body: The body, rewritten in place.
    ///   - fields: The answer's fields, which describe the body; digests are removed when it changes.
    ///   - status: The answer's status.
    ///   - mediaTypes: The media types (`application/json`, lowercased) to rewrite.
    ///   - decodedLimit: The largest body a compressed one may decode to; past it, it passes as it came.
    func rewriteBody(_ body: inout Data, fields: inout HTTPFields, status: HTTPResponse.Status, mediaTypes: Set<String>,
                     decodedLimit: Int = ContentDecoding.defaultLimit) {
        guard !body.isEmpty, status != .partialContent, Self.isRewritable(fields, mediaTypes: mediaTypes) else { return }
        let isCompressed = ContentDecoding.isEncoded(fields)
        guard let plain = isCompressed ? ContentDecoding.decoded(body, fields: fields, limit: decodedLimit) : body,
              let rewritten = rewrittenJSON(plain)
        else { return }
        body = rewritten
        if isCompressed { fields[.contentEncoding] = nil }
        for name in Self.contentDigests { fields[name] = nil }
        fields[.acceptRanges] = nil
        if let tag = fields[.eTag], !tag.hasPrefix("W/") { fields[.eTag] = "W/" + tag }
    }

    /// Whether an answer with `fields` has a body ``rewriteBody(_:fields:status:mediaTypes:)`` would
    /// rewrite: a listed media type, in codings the gate can undo.
    /// - Parameters:
    ///   - fields: The answer's fields.
    ///   - mediaTypes: The listed media types.
    /// - Returns: True when its body should be held whole to be rewritten.
    static func isRewritable(_ fields: HTTPFields, mediaTypes: Set<String>) -> Bool {
        guard !mediaTypes.isEmpty, let contentType = fields[.contentType] else { return false }
        return mediaTypes.contains(mediaType(of: contentType)) && ContentDecoding.canUndo(fields)
    }

    /// Fields that hash the content, wrong once it is rewritten.
    static let contentDigests: [HTTPField.Name] = [
        HTTPField.Name("Content-Digest")!, HTTPField.Name("Repr-Digest")!, HTTPField.Name("Digest")!,
        HTTPField.Name("Content-MD5")!,
    ]

    /// `type/subtype` of a `Content-Type` value, lowercased, without parameters.
    static func mediaType(of contentType: String) -> String {
        String(contentType.prefix { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// JSON text with every string value that is an absolute URL to the upstream pointed at the proxy
    /// (``proxied(_:_:)``), or nil when none is. Object keys, and strings that merely mention the
    /// upstream inside other text, are left alone. One pass over the bytes, JSON's own escape `\/`
    /// understood (and kept) in a URL; a string with any other escape is left as it is. The text is
    /// not checked to be JSON: a string is whatever lies between unescaped quotes.
    ///
    /// Bounded: the result holds at most twice the body plus 64 KiB (every rewrite adds at most the
    /// length of the client's authority, itself capped); past that the body is passed on unchanged.
    /// - Parameter body: The body's bytes.
    /// - Returns: The rewritten body, or nil.
    func rewrittenJSON(_ body: Data) -> Data? {
        let bytes = [UInt8](body)
        let quote = UInt8(ascii: "\"")
        let backslash = UInt8(ascii: "\\")
        let limit = bytes.count * 2 + 64 * 1024
        var output: [UInt8] = []
        var copiedUpTo = 0
        var index = 0
        while let open = bytes[index...].firstIndex(of: quote) {
            var close = open + 1
            var escaped = false
            while close < bytes.count, bytes[close] != quote {
                if bytes[close] == backslash {
                    escaped = true
                    close += 1
                }
                close += 1
            }
            guard close < bytes.count else { break }
            index = close + 1
            // A string followed by `:` is an object's key.
            let next = bytes[index...].first { !Self.isJSONWhitespace($0) }
            guard next != UInt8(ascii: ":"), let target = proxiedJSONString(bytes[(open + 1)..<close], escaped: escaped)
            else { continue }
            if output.isEmpty { output.reserveCapacity(bytes.count + 1024) }
            output += bytes[copiedUpTo...open]
            output += target
            copiedUpTo = close
            guard output.count <= limit else { return nil }
        }
        guard copiedUpTo > 0 else { return nil }
        output += bytes[copiedUpTo...]
        return Data(output)
    }

    /// A JSON string's contents pointed at the proxy, or nil. `\/` escapes are read as `/` and
    /// written back as `\/`; any other escape leaves the string alone.
    private func proxiedJSONString(_ contents: ArraySlice<UInt8>, escaped: Bool) -> [UInt8]? {
        // Cheap refusal first: an absolute URL starts with its scheme's letter.
        guard let first = contents.first, Self.lowercased(first) == upstreamScheme.first else { return nil }
        guard escaped else { return proxied(contents, .body) }
        var unescaped: [UInt8] = []
        var index = contents.startIndex
        while index < contents.endIndex {
            if contents[index] == UInt8(ascii: "\\") {
                guard index + 1 < contents.endIndex, contents[index + 1] == UInt8(ascii: "/") else { return nil }
                index += 1
            }
            unescaped.append(contents[index])
            index += 1
        }
        guard let target = proxied(unescaped[...], .body) else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(target.count + 8)
        for byte in target {
            if byte == UInt8(ascii: "/") { output.append(UInt8(ascii: "\\")) }
            output.append(byte)
        }
        return output
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }
}
