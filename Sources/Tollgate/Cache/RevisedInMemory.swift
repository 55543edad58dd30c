import TollgateCore

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
