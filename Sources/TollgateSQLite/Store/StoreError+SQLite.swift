import CSQLite
import TollgateCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension StoreError {
    /// The error a person can act on for a failure SQLite reported about the file at `path`, or
    /// nil when the failure is not about the file (a constraint, a syntax error): those stay
    /// ``DatabaseError``s.
    static func translating(_ error: DatabaseError, path: String, busyTimeout: Duration) -> StoreError? {
        let system = error.systemErrorCode
        if error.isSuspension {
            return .suspended(path: path)
        }
        if error.isFull || system == ENOSPC || system == EDQUOT {
            return .diskFull(path: path, cause: error)
        }
        if system == EROFS {
            return .readOnly(path: path, cause: error)
        }
        switch error.resultCode {
        case SQLITE_READONLY:
            return .readOnly(path: path, cause: error)
        case SQLITE_BUSY, SQLITE_LOCKED:
            return .locked(path: path, waited: busyTimeout, cause: error)
        case SQLITE_CANTOPEN, SQLITE_PERM:
            // SQLite's errno is that of its last attempt (often opening the -shm read-only after
            // creating it failed), so look at the file system itself first.
            let fileManager = FileManager.default
            let directory = (path as NSString).deletingLastPathComponent
            let directoryPath = directory.isEmpty ? "." : directory
            if !fileManager.fileExists(atPath: directoryPath) {
                return .cannotOpen(path: path, reason: "its directory does not exist", cause: error)
            }
            if fileManager.fileExists(atPath: path),
               !fileManager.isWritableFile(atPath: directoryPath) || !fileManager.isWritableFile(atPath: path) {
                return .readOnly(path: path, cause: error)
            }
            let reason = switch system {
            case ENOENT: "its directory does not exist"
            case EACCES, EPERM: "permission denied"
            case EISDIR: "it is a directory"
            case 0: error.message
            default: String(cString: strerror(system))
            }
            return .cannotOpen(path: path, reason: reason, cause: error)
        default:
            return nil
        }
    }
}
