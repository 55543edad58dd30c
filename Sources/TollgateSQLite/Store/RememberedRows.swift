import TollgateCore

/// The circuit and throttle-window rows of the endpoints a connection admitted, as it last read or
/// wrote them, kept from one write transaction to the next while nothing else committed in between:
/// an admission on a closed circuit with room in its window then reads neither row again. And
/// the quota bucket an admission just charged, with its usage, kept while no statement of this
/// connection could have written a bucket's row or usage since: back-to-back admissions (a burst)
/// then read nothing at all, and neither does an admission after a write that only touched the
/// cache, a lease or a settlement that changed no total (a 304's).
///
/// Whether anything committed is told by the WAL-index header (``WALIndexWatch``), which every
/// commit of any connection in any process changes: the rows stand only for the header they were
/// left at. The store keeps that bookkeeping (``SQLiteStore/writeKeepingRecentEntries(forgettingRememberedRows:_:)``):
/// a transaction that rolls back, a commit that another came right after, and every write whose
/// SQL the store does not know (``SQLiteStore/write(_:)``) forget them all. The circuit and
/// window rows are read and updated only by their tables' own functions (`CircuitTable`,
/// `ThrottleTable`), and every statement that writes those tables is theirs. The bucket is
/// remembered only by `QuotaTable.reserve`, under the stricter rule its property states: many
/// operations write a bucket, so instead of trusting each of them, SQLite itself says which
/// statements can (``TableWriteCounter``).
struct RememberedRows {
    /// A `throttle_limits` row as `ThrottleTable.evaluate` reads it.
    struct ThrottleRow {
        let requestLimit: Int
        let windowMs: Int64
        let admittedMs: [Int64]
    }

    /// A bucket's row and the units it used in its natural window, as `QuotaTable.bucketRow` reads
    /// them, for the configured limit and window they were read with.
    struct QuotaBucketRead {
        let configuredLimit: Int
        let periodKey: String
        let periodFirstKey: String
        let row: QuotaBucketRow
        let unitsUsed: Int
    }

    /// The most endpoints remembered per table: names come from requests, so the memory is bounded.
    static let capacity = 256

    /// The tables a remembered bucket was read from: a bucket's row and its usage.
    static let quotaBucketTables = ["quota_buckets", "quota_usage"]

    /// The header the rows were current at; nil when none are known to be.
    private var header: WALIndexWatch.Header?
    /// Whether a store's write transaction that keeps the rows is running: only then are they
    /// read or remembered. A read on the same connection (in memory, the reader is the writer)
    /// never sees them.
    private var isOpen = false
    /// By endpoint; `.some(nil)` remembers that the endpoint has no row.
    private var circuits: [String: CircuitRecord?] = [:]
    private var throttleRows: [String: ThrottleRow?] = [:]
    /// By bucket. Unlike the other rows, which their tables' every write keeps true, a bucket is
    /// written by many operations (settlements, refunds, reconciliations, resets): it is kept only
    /// while no statement that can write `quota_buckets` or `quota_usage` ran on this connection
    /// since the charge that remembered it (the connection's ``TableWriteCounter``), even one
    /// that changed nothing or rolled back.
    private var quotaBuckets: [String: QuotaBucketRead] = [:]
    /// The connection's count of bucket-table writes right after the remembered charge.
    private var bucketWritesWhenRemembered: UInt64?

    /// At the start of a write transaction, with the write lock held: keeps the rows only when no
    /// commit came since they were left.
    /// - Parameter current: The WAL-index header inside the transaction.
    mutating func begin(at current: WALIndexWatch.Header?) {
        if current == nil || current != header { forgetAll() }
        isOpen = true
    }

    /// After a commit: the rows stand at `header`, the header this connection's own commit left.
    /// (A bucket is checked against the write count when it is taken, not here.)
    /// - Parameter header: The WAL-index header after this connection's own commit.
    mutating func stand(at header: WALIndexWatch.Header) {
        self.header = header
        isOpen = false
    }

    /// Forgets every row, until a transaction begins at the header a commit left.
    mutating func forgetAll() {
        header = nil
        isOpen = false
        circuits.removeAll(keepingCapacity: true)
        throttleRows.removeAll(keepingCapacity: true)
        quotaBuckets.removeAll(keepingCapacity: true)
        bucketWritesWhenRemembered = nil
    }

    /// How many reads the rows stood in for: for tests that they do.
    private(set) var readsSaved = 0

    /// The endpoint's circuit row, when remembered: `.some(nil)` when it has none.
    mutating func circuit(_ endpoint: String) -> CircuitRecord?? { recall(endpoint, in: circuits) }

    mutating func remember(circuit: CircuitRecord?, for endpoint: String) {
        if isOpen { Self.remember(circuit, for: endpoint, in: &circuits) }
    }

    mutating func forgetCircuit(_ endpoint: String) { circuits[endpoint] = nil }

    /// The endpoint's throttle row, when remembered: `.some(nil)` when it has none.
    mutating func throttleRow(_ endpoint: String) -> ThrottleRow?? { recall(endpoint, in: throttleRows) }

    mutating func remember(throttleRow: ThrottleRow?, for endpoint: String) {
        if isOpen { Self.remember(throttleRow, for: endpoint, in: &throttleRows) }
    }

    mutating func forgetThrottleRows() { throttleRows.removeAll(keepingCapacity: true) }

    private mutating func recall<Row>(_ endpoint: String, in rows: [String: Row?]) -> Row?? {
        guard isOpen, let remembered = rows[endpoint] else { return nil }
        readsSaved += 1
        return remembered
    }

    private static func remember<Row>(_ row: Row?, for endpoint: String, in rows: inout [String: Row?]) {
        if rows.count >= capacity, rows[endpoint] == nil { rows.removeAll(keepingCapacity: true) }
        rows[endpoint] = .some(row)
    }

    /// The bucket as the last admission left it, when read for the same limit and window and no
    /// statement that can write a bucket ran since, this transaction's earlier ones included (a
    /// trigger on the coalescing lease's table, say); taken, so that a transaction that does not
    /// remember it again leaves nothing behind.
    /// - Parameters:
    ///   - bucket: The bucket's name.
    ///   - configuredLimit: The limit it is read for.
    ///   - period: The window it is read for.
    ///   - bucketWrites: The connection's count of bucket-table writes now.
    mutating func takeQuotaBucket(_ bucket: String, configuredLimit: Int, period: QuotaPeriod,
                                  bucketWrites: UInt64) -> QuotaBucketRead? {
        guard isOpen, let remembered = quotaBuckets.removeValue(forKey: bucket),
              bucketWrites == bucketWritesWhenRemembered,
              remembered.configuredLimit == configuredLimit, remembered.periodKey == period.key,
              remembered.periodFirstKey == period.firstKey else { return nil }
        readsSaved += 1
        return remembered
    }

    /// Remembers the bucket as this transaction's charge left it.
    /// - Parameters:
    ///   - read: The row and the usage after the charge.
    ///   - bucket: The bucket's name.
    ///   - bucketWrites: The connection's count of bucket-table writes right after the charge.
    mutating func remember(quotaBucket read: QuotaBucketRead, for bucket: String, bucketWrites: UInt64) {
        guard isOpen else { return }
        // One bucket at a time, the one this charge left; its storage kept, not made anew.
        quotaBuckets.removeAll(keepingCapacity: true)
        quotaBuckets[bucket] = read
        bucketWritesWhenRemembered = bucketWrites
    }
}
