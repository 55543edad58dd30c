import Foundation
import HTTPTypes

/// The header rules of the cache: what is stored, how a `304` merges, how fresh a response is.
/// Pure functions over `HTTPFields`.
enum CacheHeaders {
    /// Fields that describe one connection, never a stored response (RFC 9110 §7.6.1, RFC 9111 §3.1).
    private static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
    ]

    /// The field names a message's `Connection` lists: they describe that connection only.
    static func connectionOptions(_ fields: HTTPFields) -> Set<String> {
        // Most messages have no `Connection` field (HTTP/2 forbids it): no set is built for them.
        guard fields.contains(.connection) else { return [] }
        return Set(fields[values: .connection].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingOptionalWhitespace.lowercased() }.filter { !$0.isEmpty })
    }

    /// Whether a response field may be stored: not `Set-Cookie` (a credential of its own, so it is
    /// never replayed, not even within one credential partition), not a secret by `rules`, not
    /// hop-by-hop, not named by `Connection`.
    static func isStorable(
        _ name: HTTPField.Name, rules: CacheKey.SecretRules, connectionOptions: Set<String> = []
    ) -> Bool {
        let canonical = name.canonicalName // lowercase already: matched as it is
        return canonical != "set-cookie" && canonical != "set-cookie2" && !hopByHop.contains(canonical)
            && !connectionOptions.contains(canonical) && !rules.isSecretHeader(name)
    }

    /// The fields to store from a response, with any echo of the request's secrets redacted: as
    /// they are written down, and as `HTTPField`s, as a response served from them carries them
    /// (their names are not parsed again).
    static func storableFields(
        _ fields: HTTPFields, rules: CacheKey.SecretRules, secrets: [String]
    ) -> (stored: [CacheHeaderField], parsed: [HTTPField]) {
        let options = connectionOptions(fields)
        var stored: [CacheHeaderField] = []
        var parsed: [HTTPField] = []
        stored.reserveCapacity(fields.count)
        parsed.reserveCapacity(fields.count)
        for field in fields where isStorable(field.name, rules: rules, connectionOptions: options) {
            let value = redacting(secrets, in: field.value)
            stored.append(CacheHeaderField(name: field.name.rawName, value: value))
            parsed.append(HTTPField(name: field.name, value: value))
        }
        return (stored, parsed)
    }

    /// Merges a `304`'s fields into stored ones (RFC 9111 §4.3.4): every field the `304` carries,
    /// except `Content-Length`, replaces the stored fields of the same name.
    ///
    /// It runs on every revalidation, between the `304` and the caller's answer: written as loops
    /// over the few fields a `304` carries, with names compared in place, not through sets and
    /// lowercased copies (a third of the in-memory revision's time in the end-to-end profile).
    static func merge(
        stored: [CacheHeaderField], notModified: HTTPFields, rules: CacheKey.SecretRules, secrets: [String]
    ) -> [CacheHeaderField] {
        let options = connectionOptions(notModified)
        var updates: [HTTPField] = []
        updates.reserveCapacity(notModified.count)
        for field in notModified where field.name != .contentLength
            && isStorable(field.name, rules: rules, connectionOptions: options) {
            updates.append(field)
        }
        var merged: [CacheHeaderField] = []
        merged.reserveCapacity(stored.count + updates.count)
        for field in stored where !updates.contains(where: { isSameName(field.name, canonical: $0.name.canonicalName) }) {
            merged.append(field)
        }
        for field in updates {
            merged.append(CacheHeaderField(name: field.name.rawName, value: redacting(secrets, in: field.value)))
        }
        return merged
    }

    /// Whether a stored field name, in any case, is `canonical` (a field name, lowercase): ASCII
    /// letters compared without case, as `lowercased()` would, without making the copy.
    static func isSameName(_ name: String, canonical: String) -> Bool {
        name.utf8.count == canonical.utf8.count && zip(name.utf8, canonical.utf8).allSatisfy { byte, lower in
            byte == lower || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") && byte | 0x20 == lower)
        }
    }

    /// Stored fields as `HTTPFields`; a stored name that is not a valid field name is skipped.
    static func fields(_ stored: [CacheHeaderField]) -> HTTPFields {
        var fields = HTTPFields()
        for field in stored {
            guard let name = HTTPField.Name(field.name) else { continue }
            fields.append(HTTPField(name: name, value: field.value))
        }
        return fields
    }

    /// The entity tag, verbatim.
    static func etag(_ fields: HTTPFields) -> String? {
        fields.combinedValue(.eTag).flatMap(trimmedOptionalWhitespace)
    }

    /// Whether a validator reads as the server sent it. HTTP/1 parsers below Tollgate (SwiftNIO's,
    /// Foundation's) decode field values as UTF-8 and put U+FFFD in place of other bytes, so an
    /// entity tag with 8-bit bytes (ISO-8859-1) reaches the cache changed: sent back, it would
    /// match nothing, and every revalidation would be charged for a full answer. Such a tag is not
    /// sent; the stored date is, when there is one.
    static func isIntact(_ validator: String) -> Bool {
        !validator.unicodeScalars.contains("\u{FFFD}")
    }

    /// The `Last-Modified` value, verbatim.
    static func lastModified(_ fields: HTTPFields) -> String? {
        fields.combinedValue(.lastModified).flatMap(trimmedOptionalWhitespace)
    }

    /// A field value without the spaces and tabs around it (RFC 9110's OWS), nil when nothing is left.
    private static func trimmedOptionalWhitespace(_ value: String) -> String? {
        let trimmed = value.trimmingOptionalWhitespace
        if trimmed.isEmpty { return nil }
        return trimmed.startIndex == value.startIndex && trimmed.endIndex == value.endIndex ? value : String(trimmed)
    }

    /// Weak comparison of entity tags (RFC 9110 §8.8.3.2): ``EntityTags/weaklyMatch(_:_:)``.
    static func weaklyMatch(_ first: String, _ second: String) -> Bool {
        EntityTags.weaklyMatch(first, second)
    }

    /// Until when a response received at `now` stays fresh, or nil when it is not fresh at `now`:
    /// ``freshness(_:status:requestTime:responseTime:heuristics:)`` seen from the moment it arrives.
    static func freshUntil(
        _ fields: HTTPFields, now: Date, status: Int = 200, heuristics: HeuristicFreshness = .off
    ) -> Date? {
        let freshness = freshness(fields, status: status, requestTime: now, responseTime: now, heuristics: heuristics)
        guard let until = freshness.freshUntil, until > now else { return nil }
        return until
    }

    /// Whether the request asks for a revalidation whatever the stored freshness says.
    static func requestRequiresValidation(_ fields: HTTPFields) -> Bool {
        let cacheControl = CacheControl(fields)
        if cacheControl.noCache || requestPragmaNoCache(fields) { return true }
        if case .seconds(0) = cacheControl.maxAge { return true }
        return false
    }

    private static let pragma = HTTPField.Name("Pragma")!

    /// `Pragma: no-cache` counts only when the request has no `Cache-Control` (RFC 9111 §5.4).
    static func requestPragmaNoCache(_ fields: HTTPFields) -> Bool {
        guard !fields.contains(.cacheControl) else { return false }
        return fields[values: pragma].flatMap { $0.split(separator: ",") }
            .contains { $0.trimmingOptionalWhitespace.lowercased() == "no-cache" }
    }

    /// `value` with every occurrence of each secret replaced by the redaction marker. An ASCII
    /// secret (API keys and tokens are) is found byte by byte: Foundation's search, which showed in
    /// the profile of every store, runs only for the others, whose canonically equivalent
    /// spellings it also finds. A byte match is never a smaller set than Foundation's for ASCII.
    static func redacting(_ secrets: [String], in value: String) -> String {
        var value = value
        for secret in secrets {
            if secret.isASCII {
                value = replacingBytes(of: secret, in: value)
            } else if value.contains(secret) {
                value = value.replacingOccurrences(of: secret, with: CacheKey.redactionMarker)
            }
        }
        return value
    }

    /// A plain scan: the standard library's generic `firstRange(of:)` and `replacing(_:with:)`
    /// made a store 1.5 µs slower, measured.
    private static func replacingBytes(of secret: String, in value: String) -> String {
        // Nearly every value holds no secret: said without copying either into an array.
        if value.utf8.count < secret.utf8.count || !mayContain(secret, in: value) { return value }
        let needle = Array(secret.utf8)
        let haystack = Array(value.utf8)
        var redacted: [UInt8] = []
        var start = 0
        while let match = haystack.firstIndex(ofBytes: needle, from: start) {
            redacted.append(contentsOf: haystack[start..<match])
            redacted.append(contentsOf: CacheKey.redactionMarker.utf8)
            start = match + needle.count
        }
        guard start > 0 else { return value }
        redacted.append(contentsOf: haystack[start...])
        return String(decoding: redacted, as: UTF8.self)
    }

    /// False only when `value`'s bytes surely do not hold `secret`'s: a scan of both in place
    /// when they are stored contiguously (native strings are), true otherwise.
    private static func mayContain(_ secret: String, in value: String) -> Bool {
        guard !secret.isEmpty else { return true }
        return secret.utf8.withContiguousStorageIfAvailable { needle in
            value.utf8.withContiguousStorageIfAvailable { haystack in
                UnsafeRawBufferPointer(haystack).containsBytes(UnsafeRawBufferPointer(needle))
            }
        }.flatMap { $0 } ?? true
    }
}
