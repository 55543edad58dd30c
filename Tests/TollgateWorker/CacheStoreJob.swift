import Foundation
import TollgateCore
import TollgateSQLite

/// `cache-store PATH WORKER COUNT MAX_ENTRIES`: stores COUNT cache entries of its own (with
/// eviction at MAX_ENTRIES) and prints how many it stored and how many its writes evicted.
enum CacheStoreJob {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 4, let count = Int(arguments[2]), let maxEntries = Int(arguments[3]) else {
            throw StoreRefusal.invalidArgument("cache-store needs PATH WORKER COUNT MAX_ENTRIES")
        }
        let store = try SQLiteStore(path: arguments[0])
        let worker = arguments[1]
        var evicted = 0
        for index in 0..<count {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let entry = NewCacheEntry(
                resourceKey: "\(worker)-\(index)", variantKey: "", endpoint: "worker", method: "GET",
                url: "https://api.example.com/\(worker)/\(index)", vary: nil, status: 200,
                headers: [CacheHeaderField(name: "ETag", value: "\"\(index)\"")], etag: "\"\(index)\"",
                lastModified: nil, freshUntilMs: nil, nowMs: now, body: Data(repeating: UInt8(index % 256), count: 100 + index)
            )
            var activity = CacheActivity()
            activity.count(CacheStatisticsCounts(misses: 1), for: CacheStatisticsKey(pacificDate: "2026-11-26", endpoint: "worker"))
            let result = try await store.storeCacheEntry(
                entry, retention: CacheRetention(maxEntries: maxEntries, maxTotalBodyBytes: 1 << 40, expiredBeforeMs: 0),
                activity: activity
            )
            evicted += result.pruned.evicted
        }
        print("stored \(count) evicted \(evicted)")
    }
}
