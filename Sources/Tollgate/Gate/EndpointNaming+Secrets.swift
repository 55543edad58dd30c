extension EndpointNaming {
    /// An endpoint name with the value of every secret parameter in it (`key=…`, `;api_key=…`,
    /// `access_token=…`, by the cache's secret rules) replaced by ``CacheKey/redactionMarker``.
    ///
    /// The gate applies it to every name, whatever derived it (a caller's own naming function, a
    /// name passed by hand, a redirect's authority), because a name is written in plaintext to the
    /// ledger, the circuits, the throttle, the cache's rows and the logs. A name without `=` (every
    /// name the presets give) is returned as it is, without a copy.
    static func redactingSecrets(in name: String, rules: CacheKey.SecretRules) -> String {
        let bytes = name.utf8
        guard bytes.contains(UInt8(ascii: "=")) else { return name }
        let separators: Set<UInt8> = [
            UInt8(ascii: ";"), UInt8(ascii: "?"), UInt8(ascii: "&"), UInt8(ascii: "/"), UInt8(ascii: " "),
            UInt8(ascii: ","), UInt8(ascii: "#"),
        ]
        let source = Array(bytes)
        var redacted: [UInt8] = []
        redacted.reserveCapacity(source.count)
        var index = 0
        var nameStart = 0
        while index < source.count {
            let byte = source[index]
            if separators.contains(byte) {
                redacted.append(byte)
                index += 1
                nameStart = redacted.count
                continue
            }
            guard byte == UInt8(ascii: "=") else {
                redacted.append(byte)
                index += 1
                continue
            }
            let parameterName = redacted[nameStart...]
            redacted.append(byte)
            index += 1
            let valueEnd = source[index...].firstIndex { separators.contains($0) && $0 != UInt8(ascii: " ") }
                ?? source.count
            if !parameterName.isEmpty, rules.isSecretParameter(CacheKey.decodedName(parameterName)) {
                redacted.append(contentsOf: CacheKey.redactionMarker.utf8)
            } else {
                redacted.append(contentsOf: source[index..<valueEnd])
            }
            index = valueEnd
            nameStart = redacted.count
        }
        return String(decoding: redacted, as: UTF8.self)
    }
}
