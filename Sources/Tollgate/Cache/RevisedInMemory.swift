import TollgateStore

/// A caller's answer to a `304`, revised in memory from the stored entry it was built from, and
/// the revision the write after the answer applies to that entry.
struct RevisedInMemory: Sendable {
    /// The stored response as the `304` revises it: the caller's answer.
    let response: CachedResponse
    /// What the `304` changes in ``base``.
    let revision: CacheRevision
    /// The entry the answer was built from, as the lookup read it.
    let base: CacheEntryMetadata
}

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
