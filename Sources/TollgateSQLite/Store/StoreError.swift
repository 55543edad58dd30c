import Foundation
import TollgateCore

/// Why a store refused to open a file or to carry out an operation.
///
/// Every refusal at open happens before anything is written: the file is left as it was. Each
/// description says what happened and what to do about it. What the domain's rules refuse (an
/// invalid argument, a schema this library cannot continue) is a ``StoreRefusal``, the same on
/// every store.
public enum StoreError: StorageFailure, Sendable, Hashable, CustomStringConvertible {
    /// The file exists but is not an SQLite database.
    case notADatabase(path: String)
    /// SQLite would not put the file in write-ahead-log mode (a network file system, say).
    case walUnavailable(path: String, journalMode: String)
    /// The file is shorter than its own header says: it was cut short (a failed copy, a full disk
    /// during a backup), and pages of it are missing.
    case truncated(path: String, expectedBytes: Int64, actualBytes: Int64)
    /// The file, its directory or its file system cannot be written (`SQLITE_READONLY`, `EROFS`,
    /// `EACCES`): the change was not made.
    case readOnly(path: String, cause: DatabaseError)
    /// The disk that holds the file is full, or the file reached its page cap (`SQLITE_FULL`,
    /// `ENOSPC`): the change was rolled back.
    case diskFull(path: String, cause: DatabaseError)
    /// Another connection held the lock longer than the busy timeout (`SQLITE_BUSY`).
    case locked(path: String, waited: Duration, cause: DatabaseError)
    /// SQLite could not open the file, for the reason given (a missing directory, no permission).
    case cannotOpen(path: String, reason: String, cause: DatabaseError?)
    /// The path names a directory, not a database file.
    case isDirectory(path: String)
    /// A store opened read-only found no file at the path; nothing was created.
    case notFound(path: String)
    /// A write was asked of a store opened read-only.
    case openedReadOnly(path: String)
    /// The file is an SQLite database, but another application's: neither empty nor marked as
    /// Tollgate's (`PRAGMA application_id`) nor holding Tollgate's migration history.
    case notTollgate(path: String, reason: String)
    /// The path names something that is not a regular file (a device, a FIFO, a socket).
    case notARegularFile(path: String)
    /// The file was moved away, deleted or replaced at its path while this process had it open:
    /// what it would write no other process could see, and it would be lost when this one exits.
    case fileMoved(path: String)
    /// The store is suspended (``SQLiteStore/suspend()``): it takes no lock until it is resumed,
    /// so the operation was not made (a transaction under way was rolled back).
    case suspended(path: String)

    /// Whether the store could not do its work on the file (full, read-only, locked, unopenable)
    /// although the request itself was valid: what a gate's ledger-failure policy applies to.
    public var isStorageFailure: Bool {
        switch self {
        case .readOnly, .diskFull, .locked, .cannotOpen, .openedReadOnly, .fileMoved, .suspended: true
        case .notADatabase, .walUnavailable, .truncated, .isDirectory, .notFound, .notTollgate, .notARegularFile: false
        }
    }

    /// Whether another connection held the lock longer than the busy timeout.
    public var isSuspension: Bool {
        if case .suspended = self { true } else { false }
    }

    public var isLocked: Bool {
        if case .locked = self { true } else { false }
    }

    public var description: String {
        switch self {
        case .notADatabase(let path):
            "\(path) is not a Tollgate database: it is not an SQLite file. It was left untouched."
        case .walUnavailable(let path, let journalMode):
            "\(path) could not be put in WAL mode (journal mode is \(journalMode)); "
                + "several processes cannot share it safely."
        case .truncated(let path, let expectedBytes, let actualBytes):
            "\(path) is truncated: its header describes \(expectedBytes) bytes but the file holds \(actualBytes). "
                + "Restore it from a backup; it was left untouched."
        case .readOnly(let path, let cause):
            "\(path) cannot be written: the file, its directory or its file system is read-only for this user "
                + "(\(cause.summary)). Nothing was changed. Give this user write access to the file and to its "
                + "directory (SQLite creates -wal and -shm files beside it), or use a command that only reads."
        case .diskFull(let path, let cause):
            "The disk that holds \(path) is full, or the file reached its size cap (\(cause.summary)). "
                + "The change was rolled back and nothing stored was lost. Free disk space, or make room inside "
                + "the file by clearing the response cache (tollgate cache clear; tollgate cache vacuum then "
                + "gives the space back to the disk), and try again."
        case .locked(let path, let waited, let cause):
            "\(path) is locked: another process held its lock for more than \(Self.seconds(waited)) (\(cause.summary)). "
                + "Nothing was changed. Try again when that process is done; if the lock stays, look for a "
                + "process or an sqlite3 shell with an open transaction on the file."
        case .cannotOpen(let path, let reason, _):
            "\(path) cannot be opened: \(reason). Check that its directory exists and that this user may "
                + "read and write there, or give another path."
        case .isDirectory(let path):
            "\(path) is a directory, not a database file. Give the path of a file, such as "
                + "\(path.hasSuffix("/") ? path : path + "/")tollgate.sqlite."
        case .notFound(let path):
            "There is no database at \(path); nothing was created, because it was opened read-only. "
                + "Check the path, or create the database by opening it for writing (tollgate migrate)."
        case .openedReadOnly(let path):
            "\(path) was opened read-only, and this operation writes. Nothing was changed; open the store for "
                + "writing to do it."
        case .notTollgate(let path, let reason):
            "\(path) is another application's SQLite database, not Tollgate's (\(reason)). It was left untouched: "
                + "give the path of a Tollgate database, or of a file that does not exist yet."
        case .notARegularFile(let path):
            "\(path) is not a regular file (a device, a pipe or a socket), so it cannot hold a database. "
                + "Nothing was opened or created; give the path of a file."
        case .fileMoved(let path):
            "\(path) was moved, deleted or replaced while this process had it open. Nothing more is charged: "
                + "another process could not see the charges, and they would be lost when this one exits. Put the "
                + "file back at that path, or restart this process to open the file now there."
        case .suspended(let path):
            "\(path) is suspended: the store takes no lock while the app is in the background. Nothing was "
                + "changed; try again once the store is resumed."
        }
    }

    private static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : String(format: "%.1f s", Double(milliseconds) / 1000)
    }
}
