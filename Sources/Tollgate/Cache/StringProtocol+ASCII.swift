extension StringProtocol {
    /// Whether every character is ASCII: then each is one UTF-8 byte, bytes can be searched and
    /// compared in place of characters, and no other string equals this one (canonical
    /// equivalence joins only spellings with other scalars).
    var isASCII: Bool { utf8.allSatisfy { $0 < 0x80 } }
}
