import Foundation

extension CacheKey {
    /// The normalised path and query of a request target, as UTF-8: the fragment dropped, an empty
    /// path made `/`, query parameters sorted by name (never dropped; one name's values keep their
    /// order), secret values redacted. Each secret is added to `credentials` (what the partition
    /// hashes) and `secrets` (what stored headers are scrubbed of).
    ///
    /// Bytes, not `String`s: every store of a new URL computes its key, and splitting and sorting
    /// strings was the largest part of a store's Swift time. The result is byte for byte what
    /// splitting on Unicode scalars gives, because every separator (`#`, `?`, `&`, `=`, `;`) is
    /// ASCII and an ASCII byte never occurs inside a longer UTF-8 sequence. (Never on
    /// `Character`s: a separator followed by a combining mark is one grapheme with it, and a
    /// `key=` parameter behind it would escape redaction.)
    static func normalisedTarget(
        _ rawTarget: String, secretRules: SecretRules, credentials: inout [String], secrets: inout [String]
    ) -> [UInt8] {
        let bytes = Array(rawTarget.utf8)
        let end = bytes.firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        let questionMark = bytes[..<end].firstIndex(of: UInt8(ascii: "?"))
        let path = bytes[..<(questionMark ?? end)]

        var target: [UInt8] = []
        target.reserveCapacity(end + Self.redactionMarker.utf8.count)
        if path.isEmpty {
            target.append(UInt8(ascii: "/"))
        } else if path.contains(UInt8(ascii: ";")) {
            let redacted = redactingPathParameters(
                String(decoding: path, as: UTF8.self), secretRules: secretRules, credentials: &credentials, secrets: &secrets
            )
            target.append(contentsOf: redacted.utf8)
        } else {
            target.append(contentsOf: path)
        }
        guard let questionMark else { return target }

        let parameters = QueryParameter.inNormalisedOrder(QueryParameter.parse(bytes[(questionMark + 1)..<end]))
        for (index, parameter) in parameters.enumerated() {
            target.append(index == 0 ? UInt8(ascii: "?") : UInt8(ascii: "&"))
            target.append(contentsOf: parameter.name)
            guard let value = parameter.value else { continue }
            target.append(UInt8(ascii: "="))
            guard secretRules.isSecretParameter(decodedName(parameter.name)) else {
                target.append(contentsOf: value)
                continue
            }
            target.append(contentsOf: Self.redactionMarker.utf8)
            let name = String(decoding: parameter.name, as: UTF8.self)
            let secret = String(decoding: value, as: UTF8.self)
            credentials.append("query:\(name)=\(secret)")
            collectSecret(secret, into: &secrets)
        }
        return target
    }

    /// A path with the values of its secret path parameters (`/items;key=…/x`) redacted: they
    /// carry secrets as query parameters do. Rare, so on strings.
    private static func redactingPathParameters(
        _ path: String, secretRules: SecretRules, credentials: inout [String], secrets: inout [String]
    ) -> String {
        split(Substring(path), on: "/").map { segment -> String in
            let pieces = split(segment, on: ";")
            guard pieces.count > 1 else { return String(segment) }
            return ([String(pieces[0])] + pieces.dropFirst().map { parameter -> String in
                let pair = split(parameter, on: "=", maxSplits: 1)
                guard pair.count == 2, secretRules.isSecretParameter(decodedName(pair[0])) else {
                    return String(parameter)
                }
                credentials.append("path:\(pair[0])=\(pair[1])")
                collectSecret(String(pair[1]), into: &secrets)
                return "\(pair[0])=\(redactionMarker)"
            }).joined(separator: ";")
        }.joined(separator: "/")
    }

    /// A parameter name as the secret rules compare it: percent-decoded and lowercased. An ASCII
    /// name without escapes, the common case, is lowercased byte by byte.
    static func decodedName(_ name: ArraySlice<UInt8>) -> String {
        guard name.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: "%") }) else {
            return decodedName(Substring(String(decoding: name, as: UTF8.self)))
        }
        // Written in place: decoding a lazy map took a dynamic cast per name in the profile of a store.
        return String(unsafeUninitializedCapacity: name.count) { buffer in
            for (offset, byte) in name.enumerated() {
                buffer[offset] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
            }
            return name.count
        }
    }

    /// One `name[=value]` of a query, as slices of the target's bytes.
    struct QueryParameter {
        let name: ArraySlice<UInt8>
        /// Nil for a bare `name`, empty for `name=`.
        let value: ArraySlice<UInt8>?

        /// The non-empty `&`-separated parameters of a query, in the order they came.
        static func parse(_ query: ArraySlice<UInt8>) -> [QueryParameter] {
            query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true).map { segment in
                guard let equals = segment.firstIndex(of: UInt8(ascii: "=")) else {
                    return QueryParameter(name: segment, value: nil)
                }
                return QueryParameter(name: segment[..<equals], value: segment[(equals + 1)...])
            }
        }

        /// The order of a normalised URL: by the bytes of the name, and parameters of one name in
        /// the order they came. The order of a name's values is meaning (`?sort=date&sort=title`,
        /// a list of ids), so `?a=2&a=1` and `?a=1&a=2` are different resources. Bytes, not Swift's
        /// `<` on strings, which holds canonically equivalent spellings (`é` and `e` + U+0301)
        /// equal: with it, the order such parameters arrived in would decide the URL's bytes.
        static func inNormalisedOrder(_ parameters: [QueryParameter]) -> [QueryParameter] {
            parameters.indices.sorted { first, second in
                let (firstName, secondName) = (parameters[first].name, parameters[second].name)
                return firstName.elementsEqual(secondName) ? first < second : firstName.lexicographicallyPrecedes(secondName)
            }.map { parameters[$0] }
        }
    }
}
