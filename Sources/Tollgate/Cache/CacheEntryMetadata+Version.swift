import TollgateCore

extension CacheEntryMetadata {
    /// Whether `other` is this entry as no one has revised or replaced it since: the same row,
    /// resource and variant, stored and validated at the same instants, with the same fields. LRU
    /// touches (last access, hit count) may differ: a revision's write sets those relative to
    /// what is stored.
    func isSameVersion(as other: CacheEntryMetadata) -> Bool {
        id == other.id && resourceKey == other.resourceKey && variantKey == other.variantKey
            && storedAtMs == other.storedAtMs && validatedAtMs == other.validatedAtMs && headers == other.headers
    }
}
