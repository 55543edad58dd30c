import Foundation

/// The pure part of batching: which single ID a request asks for, the request for several IDs,
/// and the split of that request's JSON answer back into one answer per ID.
///
/// A request's target (`/youtube/v3/videos?id=v1&part=snippet`) is read and written as text:
/// the other parameters keep their bytes and order, and only the ID parameter's value changes.
struct BatchSplitter: Sendable {
    /// The endpoint's policy.
    let policy: BatchPolicy

    /// One request's part in a batch.
    struct Share: Sendable, Hashable {
        /// The ID, percent-decoded: what the answer's items are matched by.
        let id: String
        /// The ID as the request's target spelled it.
        let rawValue: String
        /// The target without the ID parameter, its other parameters sorted by name: requests
        /// that share a batch have equal ones.
        let rest: String
    }

    /// The share of a request whose target names exactly one ID in the policy's parameter, once;
    /// nil for any other request (no ID, several, an empty one, the parameter twice).
    /// - Parameter target: The request's path and query.
    func share(of target: String) -> Share? {
        guard let mark = target.firstIndex(of: "?") else { return nil }
        let path = target[..<mark]
        let query = target[target.index(after: mark)...]
        var found: (id: String, raw: String)?
        var others: [(name: String, item: Substring)] = []
        for item in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.percentDecoded(parts[0])
            guard name == policy.parameter else {
                others.append((name, item))
                continue
            }
            guard found == nil, parts.count == 2, !parts[1].isEmpty else { return nil }
            let raw = String(parts[1])
            let id = Self.percentDecoded(parts[1])
            guard !id.isEmpty, !Self.bytes(of: id, contain: policy.separator), !Self.bytes(of: raw, contain: encodedSeparator)
            else { return nil }
            found = (id, raw)
        }
        guard let found else { return nil }
        // A stable sort: the values of a repeated name keep their order, which is meaning.
        let sorted = others.enumerated().sorted { ($0.element.name, $0.offset) < ($1.element.name, $1.offset) }
        let rest = String(path) + "?" + sorted.map { String($0.element.item) }.joined(separator: "&")
        return Share(id: found.id, rawValue: found.raw, rest: rest)
    }

    /// `text` with its percent escapes decoded (as it came when one is malformed). Foundation's
    /// decoding is only asked when there is an escape: it costs microseconds a call on Linux, and
    /// every request of a batchable endpoint is read here, the 304s that never join a batch included.
    static func percentDecoded(_ text: Substring) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        return String(text).removingPercentEncoding ?? String(text)
    }

    /// Whether `text`'s UTF-8 bytes hold `part`'s (an empty `part` is in every text):
    /// `String.contains(_:)` of a string goes through Foundation's locale-aware search on Linux,
    /// microseconds for an ID of a few bytes.
    static func bytes(of text: String, contain part: String) -> Bool {
        part.isEmpty || Array(text.utf8).firstIndex(ofBytes: Array(part.utf8)) != nil
    }

    /// The target of one call for several IDs: `target` with the ID parameter's value replaced by
    /// the IDs, in order, joined by the separator.
    /// - Parameters:
    ///   - target: A member's target (any member's: they differ only in the ID).
    ///   - rawValues: The IDs as their targets spelled them.
    func combinedTarget(_ target: String, ids rawValues: [String]) -> String {
        guard let mark = target.firstIndex(of: "?") else { return target }
        let items = target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true).map { item in
            let name = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            guard Self.percentDecoded(name) == policy.parameter else { return String(item) }
            return String(name) + "=" + rawValues.joined(separator: encodedSeparator)
        }
        return String(target[..<mark]) + "?" + items.joined(separator: "&")
    }

    /// Splits a batch's answer: for each ID, the answer's JSON object with only the items whose
    /// key is that ID (none for an ID the API does not know), every other field as it came but
    /// the counts of a `pageInfo` object (`totalResults`, `resultsPerPage`, as Google's list
    /// answers carry), which count the ID's own items, as a call for it alone would have.
    /// - Parameters:
    ///   - body: The batch's answer.
    ///   - ids: The IDs asked for.
    /// - Returns: Each ID's body.
    /// - Throws: ``BatchSplitError`` when the body is not a JSON object with a list of items.
    func split(_ body: Data, ids: [String]) throws(BatchSplitError) -> [String: Data] {
        guard let object = try? JSONSerialization.jsonObject(with: body), let envelope = object as? [String: Any] else {
            throw .notAJSONObject
        }
        guard let items = envelope[policy.itemsField] as? [Any] else { throw .noItemList(field: policy.itemsField) }
        var byID: [String: [Any]] = [:]
        for item in items {
            guard let fields = item as? [String: Any], let key = Self.text(fields[policy.itemKey]) else { continue }
            byID[key, default: []].append(item)
        }
        var bodies: [String: Data] = [:]
        for id in ids where bodies[id] == nil {
            var own = envelope
            let items = byID[id] ?? []
            own[policy.itemsField] = items
            if var page = envelope["pageInfo"] as? [String: Any] {
                for count in ["totalResults", "resultsPerPage"] where page[count] is NSNumber { page[count] = items.count }
                own["pageInfo"] = page
            }
            bodies[id] = (try? JSONSerialization.data(withJSONObject: own, options: [.sortedKeys, .withoutEscapingSlashes]))
                ?? Data()
        }
        return bodies
    }

    /// The separator as it is written in a query.
    private var encodedSeparator: String {
        let plain = policy.separator.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && scalar.value > 0x20 && !"&=+#%?".unicodeScalars.contains(scalar)
        }
        return plain ? policy.separator : policy.separator.addingPercentEncoding(withAllowedCharacters: .alphanumerics)
            ?? policy.separator
    }

    /// An item's key as text: a string as it is, a number as written.
    private static func text(_ value: Any?) -> String? {
        switch value {
        case let text as String: text
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }
}
