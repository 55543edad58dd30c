import Foundation
import TollgateCore

/// A `cache_stats` view row, read by column name.
extension CacheDailyStatistics: FetchableRecord {
    /// Reads a `cache_stats` row.
    /// - Parameter row: A row with the view's columns.
    /// - Throws: ``RowDecodingError`` for a column that is missing or of another type.
    public init(row: Row) throws {
        self.init(
            pacificDate: try row.decode(String.self, forColumn: "pacific_date"),
            endpoint: try row.decode(String.self, forColumn: "endpoint"),
            counts: CacheStatisticsCounts(
                hits: try row.decode(Int64.self, forColumn: "hits"),
                revalidations: try row.decode(Int64.self, forColumn: "revalidations"),
                misses: try row.decode(Int64.self, forColumn: "misses"),
                stale: try row.decode(Int64.self, forColumn: "stale"),
                bytesSaved: try row.decode(Int64.self, forColumn: "bytes_saved"),
                coalesced: try row.decode(Int64.self, forColumn: "coalesced")
            ),
            hitRate: try row.decode(Double?.self, forColumn: "hit_rate")
        )
    }
}
