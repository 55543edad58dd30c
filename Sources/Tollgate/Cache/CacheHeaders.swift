import Foundation
import HTTPTypes

/// The header rules of the cache: what is stored, how a `304` merges, how fresh a response is.
/// Pure functions over `HTTPFields`.
enum CacheHeaders {
    /// Fields that describe one connection, never a stored response (RFC 9111 §3.1).
    private static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
    ]

    /// Whether a response field may be stored: not `Set-Cookie`, not a secret, not hop-by-hop.
    static func isStorable(_ name: HTTPField.Name, sensitive: Set<HTTPField.Name>) -> Bool {
        let canonical = name.canonicalName
        return canonical != "set-cookie" && canonical != "set-cookie2" && !sensitive.contains(name)
            && !hopByHop.contains(canonical)
    }

    /// The fields to store from a response, with any echo of the request's secrets redacted.
    static func storable(_ fields: HTTPFields, sensitive: Set<HTTPField.Name>, secrets: [String]) -> [CacheHeaderField] {
        fields.filter { isStorable($0.name, sensitive: sensitive) }.map { field in
            CacheHeaderField(name: field.name.rawName, value: redacting(secrets, in: field.value))
        }
    }

    /// Merges a `304`'s fields into stored ones (RFC 9111 §4.3.4): every field the `304` carries,
    /// except `Content-Length`, replaces the stored fields of the same name.
    static func merge(
        stored: [CacheHeaderField], notModified: HTTPFields, sensitive: Set<HTTPField.Name>, secrets: [String]
    ) -> [CacheHeaderField] {
        let updates = notModified.filter { field in
            field.name != .contentLength && isStorable(field.name, sensitive: sensitive)
        }
        let replaced = Set(updates.map(\.name.canonicalName))
        var merged = stored.filter { !replaced.contains($0.name.lowercased()) }
        merged.append(contentsOf: updates.map { field in
            CacheHeaderField(name: field.name.rawName, value: redacting(secrets, in: field.value))
        })
        return merged
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
        fields[.eTag].map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The `Last-Modified` value, verbatim.
    static func lastModified(_ fields: HTTPFields) -> String? {
        fields[.lastModified].map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Weak comparison of entity tags (RFC 9110 §8.8.3.2): equal opaque tags, `W/` or not.
    static func weaklyMatch(_ first: String, _ second: String) -> Bool {
        func opaque(_ tag: String) -> Substring {
            let trimmed = Substring(tag.trimmingCharacters(in: .whitespaces))
            return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed
        }
        return opaque(first) == opaque(second)
    }

    /// Until when a response received at `now` stays fresh (RFC 9111 §4.2), or nil when it must be
    /// revalidated before every use: `no-cache`, no `max-age` nor `Expires`, an invalid `max-age`
    /// or `Expires` (which means already stale), or a lifetime its age has used up.
    static func freshUntil(_ fields: HTTPFields, now: Date) -> Date? {
        let cacheControl = CacheControl(fields)
        guard !cacheControl.noCache, !cacheControl.noStore else { return nil }
        let date = fields[.date].flatMap(HTTPDate.parse)
        let lifetime: TimeInterval
        switch cacheControl.maxAge {
        case .seconds(let seconds):
            lifetime = TimeInterval(seconds)
        case .invalid:
            return nil
        case nil:
            guard let expiresText = fields[.expires] else { return nil }
            guard let expires = HTTPDate.parse(expiresText) else { return nil }
            lifetime = expires.timeIntervalSince(date ?? now)
        }
        let ageValue = fields[.age].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }.map { max(0, $0) } ?? 0
        let apparentAge = date.map { max(0, now.timeIntervalSince($0)) } ?? 0
        let currentAge = max(TimeInterval(ageValue), apparentAge)
        let remaining = lifetime - currentAge
        guard remaining > 0, remaining.isFinite else { return nil }
        return now.addingTimeInterval(min(remaining, 100 * 365 * 86_400))
    }

    /// Whether the request asks for a revalidation whatever the stored freshness says.
    static func requestRequiresValidation(_ fields: HTTPFields) -> Bool {
        let cacheControl = CacheControl(fields)
        if cacheControl.noCache { return true }
        if case .seconds(0) = cacheControl.maxAge { return true }
        return false
    }

    private static func redacting(_ secrets: [String], in value: String) -> String {
        var value = value
        for secret in secrets where value.contains(secret) {
            value = value.replacingOccurrences(of: secret, with: CacheKey.redactionMarker)
        }
        return value
    }
}
