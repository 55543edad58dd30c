import Foundation
import TollgateCore

/// Cache entries this process read recently, kept in memory for as long as nothing can have
/// changed them in the file: the hot path of a cache hit, which then reads no row at all.
///
/// Two things change the file under an entry read earlier, and both are seen:
/// - **Another connection's commit** (another process, or another store on the same file in this
///   one). SQLite's `PRAGMA data_version` on this store's own connection changes exactly then, and
///   never for that connection's own commits; ``observe(dataVersion:)`` drops everything when it
///   moved.
/// - **This store's own writes** of cache rows. Each one calls ``forget(resourceKey:)`` or
///   ``forgetAll()``, which also move ``generation`` on, so that a read that began before the write
///   cannot put what it read back in afterwards (``remember(_:resourceKey:readAt:)`` refuses it).
///
/// Writes that only touch LRU times and hit counts change nothing a hit serves, and forget nothing.
/// Memory is bounded by ``maximumResources`` and ``maximumBodyBytes``: past either, the oldest
/// remembered resources go first.
struct RecentCacheEntries {
    /// Every stored variant of one resource, as one read found them, and the bodies read so far.
    struct Resource {
        var candidates: [CacheEntryMetadata]
        /// The read left out variants validated before this: a lookup that wants older ones reads the file.
        var validatedSinceMs: Int64
        var bodies: [Int64: Data]

        var bodyBytes: Int { bodies.values.reduce(0) { $0 + $1.count } }
    }

    /// What a lookup in memory found.
    enum Lookup {
        /// The entry, or nil when the resource has no live variant for the request: the file would
        /// give the same answer.
        case known(CacheEntry?)
        /// Not in memory (or its chosen body is not): read the file.
        case unknown
    }

    let maximumResources: Int
    let maximumBodyBytes: Int
    /// Moves on with every forgetting, so a read that overlapped one is not remembered.
    private(set) var generation: UInt64 = 0
    private var dataVersion: Int64?
    private var resources: [String: Resource] = [:]
    /// Resource keys in the order they were remembered; may hold keys forgotten since.
    private var order: [String] = []
    private var orderStart = 0
    private var bodyBytes = 0

    init(maximumResources: Int = 1024, maximumBodyBytes: Int = 8 << 20) {
        self.maximumResources = maximumResources
        self.maximumBodyBytes = maximumBodyBytes
    }

    /// Drops everything when another connection committed since the last look.
    /// - Parameter dataVersion: `PRAGMA data_version` on the connection that writes for this store.
    mutating func observe(dataVersion: Int64) {
        if self.dataVersion != dataVersion {
            if self.dataVersion != nil { forgetAll() }
            self.dataVersion = dataVersion
        }
    }

    /// The entry for a resource, chosen by `selectVariant` among its live variants, when memory holds it.
    func lookup(
        resourceKey: String, validatedSinceMs: Int64, selectVariant: ([CacheEntryMetadata]) -> Int64?
    ) -> Lookup {
        guard dataVersion != nil, let resource = resources[resourceKey], validatedSinceMs >= resource.validatedSinceMs
        else { return .unknown }
        // Most resources have one variant, live: no filtered copy of the list then.
        let live = resource.candidates.allSatisfy { $0.validatedAtMs >= validatedSinceMs }
            ? resource.candidates : resource.candidates.filter { $0.validatedAtMs >= validatedSinceMs }
        guard !live.isEmpty else { return .known(nil) }
        guard let id = selectVariant(live) else { return .known(nil) }
        guard let body = resource.bodies[id], let index = live.firstIndex(where: { $0.id == id }) else { return .unknown }
        return .known(CacheEntry(metadata: live[index], body: body))
    }

    /// Keeps what one read transaction found for a resource, unless a write forgot something since
    /// the read began (`generation` moved) or no data version was observed before it.
    mutating func remember(_ resource: Resource, resourceKey: String, readAt generation: UInt64) {
        guard generation == self.generation, dataVersion != nil else { return }
        let size = resource.bodyBytes
        guard size <= maximumBodyBytes / 4 else { return }
        if let previous = resources.updateValue(resource, forKey: resourceKey) {
            bodyBytes -= previous.bodyBytes
        } else {
            order.append(resourceKey)
        }
        bodyBytes += size
        while resources.count > maximumResources || bodyBytes > maximumBodyBytes, orderStart < order.count {
            let oldest = order[orderStart]
            orderStart += 1
            if oldest != resourceKey, let removed = resources.removeValue(forKey: oldest) {
                bodyBytes -= removed.bodyBytes
            }
        }
        if orderStart > order.count / 2, orderStart > 64 {
            order.removeFirst(orderStart)
            orderStart = 0
        }
    }

    /// Forgets one resource, after this store wrote its rows.
    mutating func forget(resourceKey: String) {
        generation &+= 1
        if let removed = resources.removeValue(forKey: resourceKey) { bodyBytes -= removed.bodyBytes }
    }

    /// Forgets everything, after a write whose changed rows are not known one by one.
    mutating func forgetAll() {
        generation &+= 1
        resources.removeAll(keepingCapacity: true)
        order.removeAll(keepingCapacity: true)
        orderStart = 0
        bodyBytes = 0
    }
}
