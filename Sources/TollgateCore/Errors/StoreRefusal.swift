/// A call or a database that a store refuses by the domain's rules, the same way on every store.
///
/// The rules and their messages exist once, here and in ``QuotaRules``, ``CircuitRules`` and
/// ``MigrationHistory``; the SQLite and PostgreSQL stores throw these values unchanged, so a
/// caller handles both stores alike. Nothing is written when a store throws one.
public enum StoreRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// An argument that the operation cannot accept.
    case invalidArgument(String)
    /// An applied migration's recorded checksum differs from the library's copy of it.
    case migrationChecksumMismatch(version: Int, name: String, recorded: String, expected: String)
    /// The database has migrations this library does not know: a newer Tollgate wrote it.
    case databaseIsNewer(databaseVersion: Int, libraryVersion: Int)
    /// A store opened read-only (or one that may not migrate) found a database whose schema is
    /// older than the library's. `path` is the file, or the server (`host:port/database`).
    case migrationsPending(path: String, databaseVersion: Int, libraryVersion: Int)

    public var description: String {
        switch self {
        case .invalidArgument(let reason):
            "Invalid argument: \(reason)"
        case .migrationChecksumMismatch(let version, let name, let recorded, let expected):
            "Migration \(version) (\(name)) was applied from a different script than this library's "
                + "(recorded checksum \(recorded.prefix(12)), library \(expected.prefix(12))). "
                + "The database was not changed."
        case .databaseIsNewer(let databaseVersion, let libraryVersion):
            "The database is at schema version \(databaseVersion), newer than this library's version "
                + "\(libraryVersion). Upgrade Tollgate to open it; the database was not changed."
        case .migrationsPending(let path, let databaseVersion, let libraryVersion):
            "\(path) is at schema version \(databaseVersion) and this library needs version \(libraryVersion); "
                + "opened read-only, it was not migrated. Open it for writing once (tollgate migrate) to migrate it."
        }
    }
}

extension StoreRefusal: StorageFailure {
    /// Always false: the store refused the call or the database by the rules; the storage works.
    public var isStorageFailure: Bool { false }
}
