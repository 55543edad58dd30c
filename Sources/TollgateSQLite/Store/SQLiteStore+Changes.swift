import Foundation
import TollgateCore

extension SQLiteStore: ChangeMarkingStorage {
    /// A mark that changes whenever any connection, in any process, commits to the file: read from
    /// the WAL index that every process shares, with no lock and no query, so a watcher can look
    /// many times a second. Nil when the file has no WAL index to read (an in-memory store, an
    /// immutable snapshot, a moment when the index is being rewritten): poll the store instead.
    public var changeMark: StoreChangeMark? {
        walIndexWatch?.header().map { StoreChangeMark(bytes: $0.bytes) }
    }
}
