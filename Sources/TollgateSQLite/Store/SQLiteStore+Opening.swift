import CSQLite
import Foundation
import TollgateCore

/// Opening a file: for writing (created, migrated, in WAL mode) or for reading only.
extension SQLiteStore {
    typealias Opened = (writer: SerializedDatabase, reader: SerializedDatabase, applied: [Migration], immutable: Bool)

    /// Creates the file when missing, migrates it, and opens a writer and a reader.
    static func openForWriting(path: String, configuration: Configuration, migrator: Migrator) throws -> Opened {
        try DatabaseFile.requireFilePath(path)
        try DatabaseFile.createIfMissing(path: path)
        try DatabaseFile.requireSQLiteHeader(path: path)
        try DatabaseFile.requireCompleteFile(path: path)
        let database = try Self.refusingNonDatabase(path: path) {
            let database = try Database(path: path, busyTimeout: configuration.busyTimeout)
            // Check whose file it is and its history before the first write, so a refused file
            // stays untouched (no table added, its journal mode unchanged).
            try DatabaseOwnership.requireTollgate(database, path: path, firstMigration: migrator.migrations.first)
            _ = try migrator.status(database)
            return database
        }
        // SQLite opens a file it cannot write read-only without a word, and an up-to-date file
        // needs no write to open: refuse here, not at the first request.
        if database.isFileReadOnly {
            throw StoreError.readOnly(path: path, cause: DatabaseError(
                extendedResultCode: SQLITE_READONLY, message: "the file could only be opened read-only"
            ))
        }
        try Self.configureWriter(database)
        try Self.enableWAL(database, path: path)
        let applied = try migrator.migrate(database, now: Date.init)
        if let maximumPageCount = configuration.maximumPageCount {
            guard maximumPageCount > 0 else {
                throw StoreRefusal.invalidArgument("maximum page count must be positive, got \(maximumPageCount)")
            }
            // PRAGMA arguments cannot be bound; an Int is safe to interpolate.
            _ = try database.fetchValue(sql: "PRAGMA max_page_count = \(maximumPageCount)")
        }
        let writer = SerializedDatabase(database: database, label: "tollgate.store.writer")

        let readConnection = try Database(path: path, busyTimeout: configuration.busyTimeout)
        try readConnection.execute(sql: "PRAGMA foreign_keys = ON")
        try readConnection.execute(sql: "PRAGMA query_only = ON")
        let reader = SerializedDatabase(database: readConnection, label: "tollgate.store.reader")
        return (writer, reader, applied, false)
    }

    /// Opens one read-only connection on an existing, up-to-date file; creates and writes nothing.
    static func openForReading(path: String, configuration: Configuration, migrator: Migrator) throws -> Opened {
        try DatabaseFile.requireFilePath(path)
        guard FileManager.default.fileExists(atPath: path) else { throw StoreError.notFound(path: path) }
        try DatabaseFile.requireSQLiteHeader(path: path)
        try DatabaseFile.requireCompleteFile(path: path)
        let (database, statuses, immutable) = try refusingNonDatabase(path: path) {
            try openReadOnlyConnection(path: path, busyTimeout: configuration.busyTimeout, migrator: migrator)
        }
        if statuses.contains(where: { !$0.isApplied }) {
            throw StoreRefusal.migrationsPending(
                path: path, databaseVersion: statuses.filter(\.isApplied).map(\.migration.version).max() ?? 0,
                libraryVersion: migrator.libraryVersion
            )
        }
        try database.execute(sql: "PRAGMA foreign_keys = ON")
        try database.execute(sql: "PRAGMA query_only = ON")
        let connection = SerializedDatabase(database: database, label: "tollgate.store.reader")
        return (connection, connection, [], immutable)
    }

    /// A read-only connection and the file's migration status, read through it.
    ///
    /// Reading a WAL file needs its shared-memory file (`-shm`): SQLite creates it when missing,
    /// and cannot in a read-only directory or file system, or on a full disk. The file is then
    /// read as immutable, without the `-shm` — but only when its write-ahead log is empty or
    /// absent, so no committed page is missed.
    static func openReadOnlyConnection(
        path: String, busyTimeout: Duration, migrator: Migrator
    ) throws -> (database: Database, statuses: [MigrationStatus], immutable: Bool) {
        let database = try Database(path: path, mode: .readOnly, busyTimeout: busyTimeout)
        func statuses(_ database: Database) throws -> [MigrationStatus] {
            try DatabaseOwnership.requireTollgate(database, path: path, firstMigration: migrator.migrations.first)
            return try migrator.status(database)
        }
        do {
            return (database, try statuses(database), false)
        } catch let error as DatabaseError where error.cannotUseSharedMemory {
            guard DatabaseFile.hasEmptyLog(path: path) else {
                // Reading the file alone would miss committed pages: say what is needed instead.
                throw StoreError.cannotOpen(
                    path: path,
                    reason: "its write-ahead log (\(path)-wal) holds changes that can only be read where SQLite may "
                        + "create the -shm file beside it, and this directory or file system does not allow that",
                    cause: error
                )
            }
            let snapshot = try Database(path: path, mode: .immutable, busyTimeout: busyTimeout)
            return (snapshot, try statuses(snapshot), true)
        }
    }

    static func configureWriter(_ database: Database) throws {
        try database.execute(sql: "PRAGMA foreign_keys = ON")
        try database.execute(sql: "PRAGMA synchronous = NORMAL")
        // Debian's SQLite is built with SECURE_DELETE on, which overwrites every freed page: a cache
        // eviction or a replaced body then writes its old overflow pages once more, for nothing.
        // FAST still clears deleted content on the pages a change writes anyway. Nothing secret is
        // in freed pages to begin with: the cache stores URLs and headers with their secrets
        // redacted and never a credential, and the file is readable by its owner only (0600).
        try database.execute(sql: "PRAGMA secure_delete = FAST")
    }

    /// Switches the file to WAL and checks that SQLite really did.
    static func enableWAL(_ database: Database, path: String) throws {
        // Changing the journal mode needs an exclusive lock that the busy handler does not always
        // wait for, so a process racing another one to create the file retries here.
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            do {
                let mode = try database.fetchValue(sql: "PRAGMA journal_mode = WAL").string ?? ""
                guard mode.lowercased() == "wal" else {
                    throw StoreError.walUnavailable(path: path, journalMode: mode)
                }
                try database.execute(sql: "PRAGMA synchronous = NORMAL")
                return
            } catch let error as DatabaseError where error.isBusy && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
    }

    /// Maps SQLite's "not a database" to ``StoreError/notADatabase(path:)``.
    static func refusingNonDatabase<T>(path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError where error.isNotADatabase {
            throw StoreError.notADatabase(path: path)
        }
    }
}
