import CSQLite
import TollgateCore

/// Errors a person can act on: SQLite's failures about the file, turned into ``StoreError``s.
extension SQLiteStore {
    /// The file's path, or `:memory:`.
    var locationPath: String {
        switch location {
        case .file(let path): path
        case .inMemory: ":memory:"
        }
    }

    /// Refuses a write on a store opened read-only, before any connection is touched.
    func requireWritable() throws {
        if isReadOnly { throw StoreError.openedReadOnly(path: locationPath) }
    }

    /// Refuses to write into a file that is no longer at its path (deleted, replaced by another
    /// file, moved away): no other process could see the write, and it would be lost when this one
    /// exits. Asked before every write transaction (see ``OpenedFile`` for what it costs).
    /// - Throws: ``StoreError/fileMoved(path:)``.
    func requireFileInPlace() throws {
        guard let openedFile, !openedFile.isAtPath else { return }
        throw StoreError.fileMoved(path: openedFile.path)
    }

    /// Runs `body`, turning SQLite's failures about the file into ``StoreError``s that say what to do.
    ///
    /// In a read, a plain `SQLITE_READONLY` is the reader's `query_only` refusing a write that the
    /// caller should not have made, not a file that cannot be written: it stays a ``DatabaseError``.
    func translatingErrors<T>(reading: Bool = false, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as DatabaseError {
            throw Self.translated(error, path: locationPath, busyTimeout: busyTimeout, reading: reading)
        }
    }

    /// Runs `body`, turning SQLite's failures about the file into ``StoreError``s that say what to do.
    static func translatingErrors<T>(
        path: String, busyTimeout: Duration, reading: Bool = false, _ body: () throws -> T
    ) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            throw translated(error, path: path, busyTimeout: busyTimeout, reading: reading)
        }
    }

    static func translated(_ error: DatabaseError, path: String, busyTimeout: Duration, reading: Bool) -> any Error {
        if reading && error.extendedResultCode == SQLITE_READONLY && error.systemErrorCode == 0 { return error }
        return StoreError.translating(error, path: path, busyTimeout: busyTimeout) ?? error
    }
}
