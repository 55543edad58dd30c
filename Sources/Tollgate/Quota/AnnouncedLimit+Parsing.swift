import Foundation
import HTTPTypes
import RawStructuredFieldValues

extension AnnouncedLimit {
    /// Every limit an answer announces, in the order the families are listed; an empty list
    /// when it announces none. A field that does not parse is skipped, never guessed at.
    ///
    /// | Family | Fields | Reset read as |
    /// |---|---|---|
    /// | IETF | `RateLimit: "p";r=50;t=30`, `RateLimit-Policy: "p";q=100;w=60` | seconds from now |
    /// | IETF, earlier drafts | `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` | seconds from now |
    /// | GitHub, X | `X-RateLimit-Limit`, `-Remaining`, `-Reset`, `-Resource` | Unix time |
    /// | OpenAI | `x-ratelimit-limit-requests`, `-remaining-requests`, `-reset-requests` (and `-tokens`) | a duration such as `6m0s`, `1.5s`, `59ms` |
    /// | Anthropic | `anthropic-ratelimit-requests-limit`, `-remaining`, `-reset` (and `tokens`, `input-tokens`, `output-tokens`) | RFC 3339 |
    /// - Parameters:
    ///   - fields: The answer's header fields.
    ///   - now: When the answer arrived, for resets given as seconds or durations.
    /// - Returns: The announcements.
    public static func parse(_ fields: HTTPFields, at now: Date) -> [AnnouncedLimit] {
        var limits = ietf(fields, now: now)
        if limits.isEmpty { limits += earlierIETF(fields, now: now) }
        limits += gitHub(fields)
        limits += openAI(fields, now: now)
        limits += anthropic(fields)
        return limits
    }

    private static func value(_ fields: HTTPFields, _ name: String) -> String? {
        HTTPField.Name(name).flatMap { fields[$0] }?.trimmingCharacters(in: .whitespaces)
    }

    private static func int(_ fields: HTTPFields, _ name: String) -> Int? {
        value(fields, name).flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    // MARK: IETF

    private static func ietf(_ fields: HTTPFields, now: Date) -> [AnnouncedLimit] {
        guard let current = value(fields, "RateLimit"), let items = members(current) else { return [] }
        let policies = value(fields, "RateLimit-Policy").flatMap(members) ?? []
        return items.compactMap { name, parameters in
            guard let remaining = parameters["r"].flatMap(integer), remaining >= 0 else { return nil }
            let policy = policies.first { $0.name == name }?.parameters
            return AnnouncedLimit(
                policy: name, unit: policy?["qu"].flatMap(text).map(unit(ietfUnit:)) ?? .requests,
                limit: policy?["q"].flatMap(integer), remaining: remaining,
                resetsAt: parameters["t"].flatMap(integer).map { now.addingTimeInterval(TimeInterval($0)) },
                window: policy?["w"].flatMap(integer).map { .seconds($0) }
            )
        }
    }

    /// A structured-field List's members: each one's name (a String or Token item) and parameters.
    private static func members(_ field: String) -> [(name: String, parameters: [String: RFC9651BareItem])]? {
        var parser = StructuredFieldValueParser(Array(field.utf8))
        guard let list = try? parser.parseListFieldValue() else { return nil }
        return list.compactMap { member in
            guard case .item(let item) = member, let name = text(item.rfc9651BareItem) else { return nil }
            var parameters: [String: RFC9651BareItem] = [:]
            for (key, value) in item.rfc9651Parameters { parameters[key] = value }
            return (name, parameters)
        }
    }

    private static func integer(_ item: RFC9651BareItem) -> Int? {
        if case .integer(let value) = item { return Int(exactly: value) }
        return nil
    }

    private static func text(_ item: RFC9651BareItem) -> String? {
        switch item {
        case .string(let value): value
        case .token(let value): value
        default: nil
        }
    }

    private static func unit(ietfUnit: String) -> Unit {
        ietfUnit == "requests" ? .requests : ietfUnit.contains("token") ? .tokens : .requests
    }

    private static func earlierIETF(_ fields: HTTPFields, now: Date) -> [AnnouncedLimit] {
        guard let remaining = int(fields, "RateLimit-Remaining") else { return [] }
        return [AnnouncedLimit(
            limit: int(fields, "RateLimit-Limit"), remaining: remaining,
            resetsAt: int(fields, "RateLimit-Reset").map { now.addingTimeInterval(TimeInterval($0)) }
        )]
    }

    // MARK: Vendors

    private static func gitHub(_ fields: HTTPFields) -> [AnnouncedLimit] {
        guard let remaining = int(fields, "X-RateLimit-Remaining") else { return [] }
        return [AnnouncedLimit(
            policy: value(fields, "X-RateLimit-Resource"), limit: int(fields, "X-RateLimit-Limit"), remaining: remaining,
            resetsAt: int(fields, "X-RateLimit-Reset").map { Date(timeIntervalSince1970: TimeInterval($0)) }
        )]
    }

    private static func openAI(_ fields: HTTPFields, now: Date) -> [AnnouncedLimit] {
        [(Unit.requests, "requests"), (Unit.tokens, "tokens")].compactMap { unit, suffix in
            guard let remaining = int(fields, "x-ratelimit-remaining-\(suffix)") else { return nil }
            return AnnouncedLimit(
                unit: unit, limit: int(fields, "x-ratelimit-limit-\(suffix)"), remaining: remaining,
                resetsAt: value(fields, "x-ratelimit-reset-\(suffix)").flatMap(goDuration).map { now.addingTimeInterval($0) }
            )
        }
    }

    private static func anthropic(_ fields: HTTPFields) -> [AnnouncedLimit] {
        [(Unit.requests, "requests"), (.tokens, "tokens"), (.inputTokens, "input-tokens"), (.outputTokens, "output-tokens")]
            .compactMap { unit, name in
                guard let remaining = int(fields, "anthropic-ratelimit-\(name)-remaining") else { return nil }
                return AnnouncedLimit(
                    unit: unit, limit: int(fields, "anthropic-ratelimit-\(name)-limit"), remaining: remaining,
                    resetsAt: value(fields, "anthropic-ratelimit-\(name)-reset").flatMap(rfc3339)
                )
            }
    }

    /// A duration as Go writes one (`6m0s`, `1h2m3.5s`, `59ms`, `20s`), in seconds.
    static func goDuration(_ text: String) -> TimeInterval? {
        var seconds: TimeInterval = 0
        var number = ""
        var index = text.startIndex
        var sawUnit = false
        while index < text.endIndex {
            let character = text[index]
            if character.isNumber || character == "." {
                number.append(character)
                index = text.index(after: index)
                continue
            }
            guard let value = Double(number) else { return nil }
            let rest = text[index...]
            let (scale, length): (TimeInterval, Int) = rest.hasPrefix("ms") ? (0.001, 2)
                : rest.hasPrefix("h") ? (3600, 1) : rest.hasPrefix("m") ? (60, 1) : rest.hasPrefix("s") ? (1, 1) : (0, 0)
            guard length > 0 else { return nil }
            seconds += value * scale
            number = ""
            sawUnit = true
            index = text.index(index, offsetBy: length)
        }
        return number.isEmpty && sawUnit ? seconds : nil
    }

    private static func rfc3339(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
