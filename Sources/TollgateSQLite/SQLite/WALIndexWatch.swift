import CSQLite
import TollgateCore

/// Tells, without a lock or a system call, whether any connection (in any process) may have
/// committed to a WAL database since a moment: by reading the WAL-index header at the start of
/// the database's `-shm` file, which every commit changes (its change counter, frame count and
/// checksums) and which SQLite's readers read the same way before they take a lock
/// (https://www.sqlite.org/walformat.html). `PRAGMA data_version` answers the same question
/// only inside a read transaction: four `fcntl` locks and a statement, most of a cache hit.
///
/// It reads through the connection's own mapping of the file (`xShmMap`), never a descriptor
/// of its own: closing one would drop every POSIX lock the process holds on the file.
///
/// `@unchecked Sendable`: its one stored pointer is set in `init` and never changed; the memory
/// it points to is SQLite's shared mapping, which stays mapped while the connection it came from
/// is open (the store that owns both keeps it open for the watch's whole life), and every read of
/// it goes through `_tollgate_wal_index_header`, which copies with volatile loads and a barrier
/// and refuses a header caught mid-update — the same lock-free read SQLite's readers make.
final class WALIndexWatch: @unchecked Sendable {
    /// The 48-byte WAL-index header: equal headers mean no commit in between. Plain words, so
    /// reading one allocates nothing.
    struct Header: Equatable, Sendable {
        fileprivate var words: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32,
                                UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

        /// The change counter (`iChange`), which every commit moves by one; a checkpoint, which
        /// changes no content, does not.
        var changeCounter: UInt32 { words.2 }

        /// The header as bytes, for a mark compared outside this module.
        var bytes: [UInt8] { withUnsafeBytes(of: words) { Array($0) } }

        static func == (lhs: Header, rhs: Header) -> Bool {
            // Word by word: every write transaction compares headers, and a byte-wise generic
            // comparison showed in its profile.
            let (l, r) = (lhs.words, rhs.words)
            return l.0 == r.0 && l.1 == r.1 && l.2 == r.2 && l.3 == r.3 && l.4 == r.4 && l.5 == r.5
                && l.6 == r.6 && l.7 == r.7 && l.8 == r.8 && l.9 == r.9 && l.10 == r.10 && l.11 == r.11
        }
    }

    private let walIndex: UnsafeRawPointer

    /// Borrows the mapping of `database`'s WAL index, or nil when it has none (not in WAL mode,
    /// in memory, immutable). The watch must not outlive the connection.
    init?(_ database: Database) {
        guard let walIndex = _tollgate_wal_index(database.handle) else { return nil }
        self.walIndex = walIndex
    }

    /// The header as it stands, or nil when a writer is publishing a commit right now.
    func header() -> Header? {
        var header = Header()
        let consistent = withUnsafeMutablePointer(to: &header.words) { words in
            words.withMemoryRebound(to: UInt32.self, capacity: 12) { _tollgate_wal_index_header(walIndex, $0) }
        }
        return consistent == 1 ? header : nil
    }
}
