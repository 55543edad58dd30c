import TollgateCore
import TollgateSQLite

/// What the operators' listener reads of a store: the dashboard's snapshot, the day's timeline
/// and burn rate, the cache's days and the circuits' history. `SQLiteStore` and `PostgresStore`
/// both provide it; the listener never writes.
public typealias AdminStorage = DashboardSnapshotStorage & QuotaTimelineStorage & QuotaStorage & CacheStorage
    & CircuitStorage
