/// A store that can tell, cheaply, whether anything changed since it was last read: a view that
/// shows the store reads it again only when the mark moves.
public protocol ChangeMarkingStorage: Sendable {
    /// A mark that changes whenever any process commits to the store; `nil` when it cannot tell.
    var changeMark: StoreChangeMark? { get }
}

/// What a watcher compares to tell that a store changed: equal marks, no commit in between.
public struct StoreChangeMark: Sendable, Hashable {
    private let bytes: [UInt8]

    /// Creates a mark from the bytes a store reads to tell its state (for SQLite, the WAL index's
    /// header, which every commit changes).
    /// - Parameter bytes: The bytes.
    public init(bytes: some Sequence<UInt8>) {
        self.bytes = Array(bytes)
    }
}
