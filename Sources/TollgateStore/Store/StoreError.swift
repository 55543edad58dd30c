/// Why a store refused to open a file or to carry out an operation.
///
/// Every refusal at open happens before anything is written: the file is left as it was.
public enum StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file exists but is not an SQLite database.
    case notADatabase(path: String)
    /// An applied migration's recorded checksum differs from the library's copy of it.
    case migrationChecksumMismatch(version: Int, name: String, recorded: String, expected: String)
    /// The database has migrations this library does not know: a newer Tollgate wrote it.
    case databaseIsNewer(databaseVersion: Int, libraryVersion: Int)
    /// SQLite would not put the file in write-ahead-log mode (a network file system, say).
    case walUnavailable(path: String, journalMode: String)
    /// An argument that the operation cannot accept.
    case invalidArgument(String)
    /// The file is shorter than its own header says: it was cut short (a failed copy, a full disk
    /// during a backup), and pages of it are missing.
    case truncated(path: String, expectedBytes: Int64, actualBytes: Int64)

    public var description: String {
        switch self {
        case .notADatabase(let path):
            "\(path) is not a Tollgate database: it is not an SQLite file. It was left untouched."
        case .migrationChecksumMismatch(let version, let name, let recorded, let expected):
            "Migration \(version) (\(name)) was applied from a different script than this library's "
                + "(recorded checksum \(recorded.prefix(12)), library \(expected.prefix(12))). "
                + "The database was not changed."
        case .databaseIsNewer(let databaseVersion, let libraryVersion):
            "The database is at schema version \(databaseVersion), newer than this library's version "
                + "\(libraryVersion). Upgrade Tollgate to open it; the database was not changed."
        case .walUnavailable(let path, let journalMode):
            "\(path) could not be put in WAL mode (journal mode is \(journalMode)); "
                + "several processes cannot share it safely."
        case .invalidArgument(let reason):
            "Invalid argument: \(reason)"
        case .truncated(let path, let expectedBytes, let actualBytes):
            "\(path) is truncated: its header describes \(expectedBytes) bytes but the file holds \(actualBytes). "
                + "Restore it from a backup; it was left untouched."
        }
    }
}
