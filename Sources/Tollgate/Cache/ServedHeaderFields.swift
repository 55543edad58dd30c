import HTTPTypes
import TollgateCore

/// A stored entry's header fields as the cache serves them, parsed once: answers from the same
/// entry differ only by their `Age`, so a hit copies these and sets that one field.
struct ServedHeaderFields: Sendable {
    /// The stored fields they were parsed from: when the entry's fields change (a store, a `304`'s
    /// merge), these no longer match and the fields are parsed again.
    let source: [CacheHeaderField]
    private let fields: HTTPFields
    /// Where `Age` goes: where the server's `Age` was, or last.
    private let ageIndex: Int

    /// Parses stored fields, leaving out names HTTP does not allow and every `Age` but a place for one.
    init(_ stored: [CacheHeaderField]) {
        self.init(stored, parsed: stored.lazy.compactMap { field in
            HTTPField.Name(field.name).map { HTTPField(name: $0, value: field.value) }
        })
    }

    /// `stored` as `parsed` holds them already: the valid ones, in order, as a store that has just
    /// made `stored` from a response's fields has them (``CacheHeaders/storableFields(_:rules:secrets:)``),
    /// so that no name is parsed again.
    init(_ stored: [CacheHeaderField], parsed fields: some Sequence<HTTPField>) {
        source = stored
        var parsed: [HTTPField] = []
        parsed.reserveCapacity(stored.count + 1)
        var storedAgeIndex: Int?
        for field in fields {
            if field.name == .age {
                // The stored Age was the server's; what is served is the current age, once.
                if storedAgeIndex == nil {
                    storedAgeIndex = parsed.count
                    parsed.append(HTTPField(name: .age, value: "0"))
                }
                continue
            }
            parsed.append(field)
        }
        if let storedAgeIndex {
            ageIndex = storedAgeIndex
        } else {
            ageIndex = parsed.count
            parsed.append(HTTPField(name: .age, value: "0"))
        }
        self.fields = HTTPFields(parsed)
    }

    /// The fields with `Age` set.
    /// - Parameter ageMilliseconds: The response's current age.
    func fields(ageMilliseconds: Int64) -> HTTPFields {
        var served = fields
        served[ageIndex] = HTTPField(name: .age, value: String(ageMilliseconds / 1000))
        return served
    }
}
