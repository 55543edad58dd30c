import Foundation
import TollgateCore

/// A `cache_entries` row, read by column name; its `headers` text through the core's
/// ``StoredHeaders`` codec.
extension CacheEntryMetadata: FetchableRecord {
    /// Reads a `cache_entries` row (every column but the body, which lives in `cache_bodies`).
    /// - Parameter row: A row with the table's columns.
    /// - Throws: ``RowDecodingError`` for a column that is missing or of another type.
    public init(row: Row) throws {
        self.init(
            id: try row.decode(Int64.self, forColumn: "id"),
            resourceKey: try row.decode(String.self, forColumn: "resource_key"),
            variantKey: try row.decode(String.self, forColumn: "variant_key"),
            endpoint: try row.decode(String.self, forColumn: "endpoint"),
            method: try row.decode(String.self, forColumn: "method"),
            url: try row.decode(String.self, forColumn: "url"),
            vary: try row.decode(String?.self, forColumn: "vary"),
            status: try row.decode(Int.self, forColumn: "status"),
            headers: StoredHeaders.decode(try row.decode(String.self, forColumn: "headers")),
            etag: try row.decode(String?.self, forColumn: "etag"),
            lastModified: try row.decode(String?.self, forColumn: "last_modified"),
            bodySize: try row.decode(Int64.self, forColumn: "body_size"),
            storedAtMs: try row.decode(Int64.self, forColumn: "stored_at_ms"),
            validatedAtMs: try row.decode(Int64.self, forColumn: "validated_at_ms"),
            freshUntilMs: try row.decode(Int64?.self, forColumn: "fresh_until_ms"),
            lastAccessMs: try row.decode(Int64.self, forColumn: "last_access_ms"),
            hitCount: try row.decode(Int64.self, forColumn: "hit_count"),
            initialAgeMs: try row.decode(Int64.self, forColumn: "initial_age_ms")
        )
    }
}
