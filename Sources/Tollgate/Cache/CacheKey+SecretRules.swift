import HTTPTypes
import Synchronization

extension CacheKey {
    /// The secret rules in the form the key computation uses, prepared once per cache.
    struct SecretRules: Sendable {
        /// Lowercased parameter names.
        let queryParameters: Set<String>
        /// Patterns for more parameter names, with what they said of the names seen so far.
        let queryParameterPatterns: RememberedVerdicts
        /// Lowercased header names.
        let headers: Set<String>
        /// Patterns for more header field names, with what they said of the names seen so far.
        let headerPatterns: RememberedVerdicts

        /// Prepares the rules.
        /// - Parameters:
        ///   - queryParameters: Query and path parameter names whose values are secrets, in any case.
        ///   - queryParameterPatterns: Patterns for more such names.
        ///   - headers: Request header fields that carry identity.
        ///   - headerPatterns: Patterns for more such fields.
        init(
            queryParameters: Set<String>, queryParameterPatterns: [SecretNamePattern] = [],
            headers: Set<HTTPField.Name>, headerPatterns: [SecretNamePattern] = []
        ) {
            self.queryParameters = Set(queryParameters.map { $0.lowercased() })
            self.queryParameterPatterns = RememberedVerdicts(queryParameterPatterns)
            self.headers = Set(headers.map { $0.canonicalName })
            self.headerPatterns = RememberedVerdicts(headerPatterns)
        }

        /// The rules a cache configuration sets.
        /// - Parameter configuration: The cache's configuration.
        init(_ configuration: CacheConfiguration) {
            self.init(
                queryParameters: configuration.sensitiveQueryParameters,
                queryParameterPatterns: configuration.sensitiveQueryParameterPatterns,
                headers: configuration.sensitiveHeaders, headerPatterns: configuration.sensitiveHeaderPatterns
            )
        }

        /// Whether a query or path parameter (its percent-decoded, lowercased name) is a secret.
        func isSecretParameter(_ lowercasedName: String) -> Bool {
            // The name is lowercase already: no second lowercasing per parameter and request.
            queryParameters.contains(lowercasedName)
                || queryParameterPatterns.anyMatches(lowercasedName)
        }

        /// Whether a header field carries a credential.
        func isSecretHeader(_ name: HTTPField.Name) -> Bool {
            // `canonicalName` is lowercase already: no second lowercasing per field and request.
            headers.contains(name.canonicalName)
                || headerPatterns.anyMatches(name.canonicalName)
        }
    }

    /// A rule's name patterns, with whether any of them matches each name seen, remembered.
    ///
    /// Every store and every new URL's key asks it of each query parameter and header field, and
    /// an API's names are few: the ten default parameter patterns, matched byte by byte after
    /// copying the name into an array, were a tenth of a new URL's key in the store's profile.
    /// Names from hostile input could be endless, so the memo is emptied when it holds
    /// ``capacity`` of them; a verdict is always the patterns' own.
    ///
    /// Only ASCII names are remembered. Swift's strings are equal, and hash alike, when they are
    /// canonically equivalent (`ť` as one scalar, or `t` and a combining caron), while the patterns
    /// match bytes: a verdict remembered for one spelling could be handed to another that the
    /// patterns judge otherwise. An ASCII string equals no other string but itself.
    final class RememberedVerdicts: Sendable {
        /// The most names remembered at once.
        static let capacity = 512
        /// The patterns whose verdicts these are.
        let patterns: [SecretNamePattern]
        private let verdicts = Mutex<[String: Bool]>([:])

        /// A memo for `patterns`, empty.
        /// - Parameter patterns: The rule's name patterns.
        init(_ patterns: [SecretNamePattern]) {
            self.patterns = patterns
        }

        /// Whether any of the patterns matches `lowercasedName`.
        /// - Parameter lowercasedName: A parameter name, percent-decoded and lowercased, or a
        ///   header field's canonical name.
        /// - Returns: The patterns' verdict.
        func anyMatches(_ lowercasedName: String) -> Bool {
            guard !patterns.isEmpty else { return false }
            guard lowercasedName.isASCII else {
                return patterns.anyMatches(lowercasedBytes: Array(lowercasedName.utf8)[...])
            }
            if let known = verdicts.withLock({ $0[lowercasedName] }) { return known }
            let verdict = patterns.anyMatches(lowercasedBytes: Array(lowercasedName.utf8)[...])
            verdicts.withLock { verdicts in
                if verdicts.count >= Self.capacity { verdicts.removeAll(keepingCapacity: true) }
                verdicts[lowercasedName] = verdict
            }
            return verdict
        }

        /// How many names are remembered now.
        var rememberedCount: Int { verdicts.withLock { $0.count } }
    }
}
