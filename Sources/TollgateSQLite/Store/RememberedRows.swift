import TollgateCore

/// The circuit and throttle-window rows of the endpoints a connection admitted, as it last read or
/// wrote them, kept from one write transaction to the next while nothing else committed in between:
/// an admission on a closed circuit with room in its window then reads neither row again.
///
/// Whether anything committed is told by the WAL-index header (``WALIndexWatch``), which every
/// commit of any connection in any process changes: the rows stand only for the header they were
/// left at. The store keeps that bookkeeping (``SQLiteStore/writeKeepingRecentEntries(_:)``):
/// a transaction that rolls back, a commit that another came right after, and every write whose
/// SQL the store does not know (``SQLiteStore/write(_:)``) forget them all. Only the two tables'
/// own functions (`CircuitTable`, `ThrottleTable`) read and update them, and every statement that
/// writes those tables is theirs.
struct RememberedRows {
    /// A `throttle_limits` row as `ThrottleTable.evaluate` reads it.
    struct ThrottleRow: Equatable {
        let requestLimit: Int
        let windowMs: Int64
        let admittedMs: [Int64]
    }

    /// The most endpoints remembered per table: names come from requests, so the memory is bounded.
    static let capacity = 256

    /// The header the rows were current at; nil when none are known to be.
    private(set) var header: WALIndexWatch.Header?
    /// Whether a store's write transaction that keeps the rows is running: only then are they
    /// read or remembered. A read on the same connection (in memory, the reader is the writer)
    /// never sees them.
    private var isOpen = false
    /// By endpoint; `.some(nil)` remembers that the endpoint has no row.
    private var circuits: [String: CircuitRecord?] = [:]
    private var throttleRows: [String: ThrottleRow?] = [:]

    /// At the start of a write transaction, with the write lock held: keeps the rows only when no
    /// commit came since they were left.
    mutating func begin(at current: WALIndexWatch.Header?) {
        if current == nil || current != header { forgetAll() }
        isOpen = true
    }

    /// After a commit: the rows stand at `header`, the header this connection's own commit left.
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
    }

    /// How many reads the rows stood in for: for tests that they do.
    private(set) var readsSaved = 0

    /// The endpoint's circuit row, when remembered: `.some(nil)` when it has none.
    mutating func circuit(_ endpoint: String) -> CircuitRecord?? {
        guard isOpen, let remembered = circuits[endpoint] else { return nil }
        readsSaved += 1
        return remembered
    }

    mutating func remember(circuit: CircuitRecord?, for endpoint: String) {
        guard isOpen else { return }
        if circuits.count >= Self.capacity, circuits[endpoint] == nil { circuits.removeAll(keepingCapacity: true) }
        circuits[endpoint] = .some(circuit)
    }

    mutating func forgetCircuit(_ endpoint: String) { circuits[endpoint] = nil }

    /// The endpoint's throttle row, when remembered: `.some(nil)` when it has none.
    mutating func throttleRow(_ endpoint: String) -> ThrottleRow?? {
        guard isOpen, let remembered = throttleRows[endpoint] else { return nil }
        readsSaved += 1
        return remembered
    }

    mutating func remember(throttleRow: ThrottleRow?, for endpoint: String) {
        guard isOpen else { return }
        if throttleRows.count >= Self.capacity, throttleRows[endpoint] == nil { throttleRows.removeAll(keepingCapacity: true) }
        throttleRows[endpoint] = .some(throttleRow)
    }

    mutating func forgetThrottleRows() { throttleRows.removeAll(keepingCapacity: true) }
}
