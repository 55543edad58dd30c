import CSQLite
import Foundation
import Logging

/// The SQLite file that holds every piece of Tollgate's state.
///
/// Opening a store applies the migrations that are pending. The store is `Sendable`: one writer
/// connection serialises every write in a `BEGIN IMMEDIATE` transaction, and a reader connection
/// runs reads beside it (WAL mode). Both work on dispatch queues of their own, so waiting for
/// another process's lock never blocks Swift concurrency's cooperative threads.
///
/// ```swift
/// let store = try SQLiteStore(path: "tollgate.sqlite")
/// let version = try await store.read { db in try db.fetchValue("PRAGMA user_version") }
/// ```
public final class SQLiteStore: Sendable {
    /// Where the database lives.
    public enum Location: Sendable, Hashable {
        /// A file on disk, created with permissions 0600 when missing.
        case file(String)
        /// A private in-memory database, gone when the store is released: for tests.
        case inMemory
    }

    /// Whether a store may write.
    public enum Access: Sendable, Hashable {
        /// Reads and writes; the file is created and migrated when needed.
        case readWrite
        /// Reads only: the file must exist and be up to date; it is never created, migrated or
        /// written, so it can be inspected on a read-only file, directory or file system, and
        /// without waiting for another process's write lock. Every write throws
        /// ``StoreError/openedReadOnly(path:)``.
        case readOnly
    }

    /// How a store opens its connections.
    public struct Configuration: Sendable {
        /// How long a statement waits for another process's lock before failing with
        /// `SQLITE_BUSY`. Five seconds by default.
        public var busyTimeout: Duration
        /// The migrations to apply. The library's own by default; tests may pass others.
        public var migrations: [Migration]
        /// The most pages the file may grow to through this store's writer (`PRAGMA
        /// max_page_count`), applied after the migrations; nil (the default) leaves SQLite's limit.
        /// A write that needs more fails with `SQLITE_FULL` (``DatabaseError/isFull``) and is
        /// rolled back, exactly as on a full disk: for capping a file's size, and for tests.
        public var maximumPageCount: Int?
        /// Whether the store may write; ``Access/readWrite`` by default.
        public var access: Access

        /// Creates a configuration.
        /// - Parameters:
        ///   - busyTimeout: How long to wait for another process's lock.
        ///   - migrations: The migrations to apply.
        ///   - maximumPageCount: The most pages the file may grow to, or nil for SQLite's limit.
        ///   - access: Whether the store may write.
        public init(busyTimeout: Duration = .seconds(5), migrations: [Migration] = Migration.all,
                    maximumPageCount: Int? = nil, access: Access = .readWrite) {
            self.busyTimeout = busyTimeout
            self.migrations = migrations
            self.maximumPageCount = maximumPageCount
            self.access = access
        }
    }

    /// Where the database lives.
    public let location: Location
    /// The migrations that opening this store applied (empty when the file was up to date).
    public let migrationsAppliedAtOpen: [Migration]
    /// Whether the store was opened with ``Access/readOnly``.
    public let isReadOnly: Bool
    /// Whether a read-only store reads the file as an immutable snapshot, because its directory
    /// or file system does not let SQLite create the shared-memory (`-shm`) file: it then does not
    /// see later writes by other processes.
    public let readsImmutableSnapshot: Bool
    private let busyTimeout: Duration

    // Internal: maintenance (VACUUM) must run on the writer outside a transaction.
    let writer: SerializedDatabase
    private let reader: SerializedDatabase
    private let logger: Logger

    /// Opens, or creates, the database at `path` and applies its pending migrations.
    /// - Parameters:
    ///   - path: The database file.
    ///   - configuration: Connection settings.
    ///   - logger: Where the store logs; the task's current logger by default.
    /// - Throws: ``StoreError`` when the file is refused (it is then left unchanged), or
    ///   ``DatabaseError`` when SQLite fails.
    public convenience init(
        path: String, configuration: Configuration = Configuration(), logger: Logger = Logger.current
    ) throws {
        try self.init(location: .file(path), configuration: configuration, logger: logger)
    }

    /// Opens, or creates, a database and applies its pending migrations.
    /// - Parameters:
    ///   - location: A file, or an in-memory database.
    ///   - configuration: Connection settings.
    ///   - logger: Where the store logs; the task's current logger by default.
    /// - Throws: ``StoreError`` when the file is refused (it is then left unchanged) or cannot be
    ///   opened, read or written (``StoreError/readOnly(path:cause:)``, ``StoreError/diskFull(path:cause:)``,
    ///   ``StoreError/locked(path:waited:cause:)``, ``StoreError/isDirectory(path:)``, and for a read-only
    ///   store ``StoreError/notFound(path:)`` and ``StoreError/migrationsPending(path:databaseVersion:libraryVersion:)``),
    ///   or ``DatabaseError`` for any other failure of SQLite.
    public init(
        location: Location, configuration: Configuration = Configuration(), logger: Logger = Logger.current
    ) throws {
        self.location = location
        self.logger = logger
        self.busyTimeout = configuration.busyTimeout
        self.isReadOnly = configuration.access == .readOnly
        let migrator = Migrator(migrations: configuration.migrations)
        switch location {
        case .inMemory:
            guard configuration.access == .readWrite else {
                throw StoreError.invalidArgument("an in-memory store cannot be opened read-only: it would be empty")
            }
            let database = try Database(path: ":memory:", busyTimeout: configuration.busyTimeout)
            try Self.configureWriter(database)
            migrationsAppliedAtOpen = try migrator.migrate(database, now: Date.init)
            writer = SerializedDatabase(database: database, label: "tollgate.store.memory")
            reader = writer
            readsImmutableSnapshot = false
        case .file(let path):
            let opened = try Self.translatingErrors(path: path, busyTimeout: configuration.busyTimeout) {
                try DatabaseFile.requireNotDirectory(path: path)
                return switch configuration.access {
                case .readWrite: try Self.openForWriting(path: path, configuration: configuration, migrator: migrator)
                case .readOnly: try Self.openForReading(path: path, configuration: configuration, migrator: migrator)
                }
            }
            writer = opened.writer
            reader = opened.reader
            migrationsAppliedAtOpen = opened.applied
            readsImmutableSnapshot = opened.immutable
        }
        for migration in migrationsAppliedAtOpen {
            logger.info("applied migration", metadata: [
                "migration.version": "\(migration.version)", "migration.name": "\(migration.name)",
            ])
        }
    }

    /// Reads the migration status of the file at `path` without creating or changing anything.
    ///
    /// A missing file reports every migration as pending.
    /// - Parameters:
    ///   - path: The database file.
    ///   - migrations: The library's migrations.
    /// - Returns: Each migration, applied or pending.
    /// - Throws: ``StoreError`` when the file is not SQLite or its history does not match.
    public static func migrationStatus(
        path: String, migrations: [Migration] = Migration.all
    ) throws -> [MigrationStatus] {
        let migrator = Migrator(migrations: migrations)
        return try translatingErrors(path: path, busyTimeout: .seconds(5)) {
            try DatabaseFile.requireNotDirectory(path: path)
            guard FileManager.default.fileExists(atPath: path) else {
                return migrator.migrations.map { MigrationStatus(migration: $0, appliedAt: nil) }
            }
            try DatabaseFile.requireSQLiteHeader(path: path)
            try DatabaseFile.requireCompleteFile(path: path)
            return try refusingNonDatabase(path: path) {
                try openReadOnlyConnection(path: path, busyTimeout: .seconds(5), migrator: migrator).statuses
            }
        }
    }

    // MARK: Access

    /// Runs `updates` in a `BEGIN IMMEDIATE` transaction on the writer connection: committed when it
    /// returns, rolled back when it throws.
    /// - Parameter updates: The work; it must not keep the `Database`.
    /// - Returns: What `updates` returns.
    /// - Throws: What `updates` throws, or ``DatabaseError``.
    public func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try requireWritable()
        return try await translatingErrors {
            try await writer.run { db in try db.inTransaction(.immediate) { try updates(db) } }
        }
    }

    /// Runs `updates` in a `BEGIN IMMEDIATE` transaction, blocking the calling thread. For
    /// synchronous callers such as command-line tools; async code uses the async overload.
    /// - Parameter updates: The work; it must not keep the `Database`.
    /// - Returns: What `updates` returns.
    /// - Throws: What `updates` throws, or ``DatabaseError``.
    public func write<T>(_ updates: (Database) throws -> T) throws -> T {
        try requireWritable()
        return try Self.translatingErrors(path: locationPath, busyTimeout: busyTimeout) {
            try writer.sync { db in try db.inTransaction(.immediate) { try updates(db) } }
        }
    }

    /// Runs `value` in a read transaction on the reader connection, beside any write.
    /// - Parameter value: The reads; writes are refused (`PRAGMA query_only`).
    /// - Returns: What `value` returns.
    /// - Throws: What `value` throws, or ``DatabaseError``.
    public func read<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await translatingErrors(reading: true) {
            try await reader.run { db in try db.inTransaction(.deferred) { try value(db) } }
        }
    }

    /// Runs `value` in a read transaction, blocking the calling thread.
    /// - Parameter value: The reads.
    /// - Returns: What `value` returns.
    /// - Throws: What `value` throws, or ``DatabaseError``.
    public func read<T>(_ value: (Database) throws -> T) throws -> T {
        try Self.translatingErrors(path: locationPath, busyTimeout: busyTimeout, reading: true) {
            try reader.sync { db in try db.inTransaction(.deferred) { try value(db) } }
        }
    }

    // MARK: Errors a person can act on

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

    private static func translated(_ error: DatabaseError, path: String, busyTimeout: Duration, reading: Bool) -> any Error {
        if reading && error.extendedResultCode == SQLITE_READONLY && error.systemErrorCode == 0 { return error }
        return StoreError.translating(error, path: path, busyTimeout: busyTimeout) ?? error
    }

    // MARK: Opening

    private typealias Opened = (writer: SerializedDatabase, reader: SerializedDatabase, applied: [Migration], immutable: Bool)

    /// Creates the file when missing, migrates it, and opens a writer and a reader.
    private static func openForWriting(path: String, configuration: Configuration, migrator: Migrator) throws -> Opened {
        try DatabaseFile.createIfMissing(path: path)
        try DatabaseFile.requireSQLiteHeader(path: path)
        try DatabaseFile.requireCompleteFile(path: path)
        let database = try Self.refusingNonDatabase(path: path) {
            let database = try Database(path: path, busyTimeout: configuration.busyTimeout)
            // Check the history before the first write, so a refused file stays untouched.
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
                throw StoreError.invalidArgument("maximum page count must be positive, got \(maximumPageCount)")
            }
            // PRAGMA arguments cannot be bound; an Int is safe to interpolate.
            _ = try database.fetchValue("PRAGMA max_page_count = \(maximumPageCount)")
        }
        let writer = SerializedDatabase(database: database, label: "tollgate.store.writer")

        let readConnection = try Database(path: path, busyTimeout: configuration.busyTimeout)
        try readConnection.execute("PRAGMA foreign_keys = ON")
        try readConnection.execute("PRAGMA query_only = ON")
        let reader = SerializedDatabase(database: readConnection, label: "tollgate.store.reader")
        return (writer, reader, applied, false)
    }

    /// Opens one read-only connection on an existing, up-to-date file; creates and writes nothing.
    private static func openForReading(path: String, configuration: Configuration, migrator: Migrator) throws -> Opened {
        guard FileManager.default.fileExists(atPath: path) else { throw StoreError.notFound(path: path) }
        try DatabaseFile.requireSQLiteHeader(path: path)
        try DatabaseFile.requireCompleteFile(path: path)
        let (database, statuses, immutable) = try refusingNonDatabase(path: path) {
            try openReadOnlyConnection(path: path, busyTimeout: configuration.busyTimeout, migrator: migrator)
        }
        if statuses.contains(where: { !$0.isApplied }) {
            throw StoreError.migrationsPending(
                path: path, databaseVersion: statuses.filter(\.isApplied).map(\.migration.version).max() ?? 0,
                libraryVersion: migrator.libraryVersion
            )
        }
        try database.execute("PRAGMA foreign_keys = ON")
        try database.execute("PRAGMA query_only = ON")
        let connection = SerializedDatabase(database: database, label: "tollgate.store.reader")
        return (connection, connection, [], immutable)
    }

    /// A read-only connection and the file's migration status, read through it.
    ///
    /// Reading a WAL file needs its shared-memory file (`-shm`): SQLite creates it when missing,
    /// and cannot in a read-only directory or file system, or on a full disk. The file is then
    /// read as immutable, without the `-shm` — but only when its write-ahead log is empty or
    /// absent, so no committed page is missed.
    private static func openReadOnlyConnection(
        path: String, busyTimeout: Duration, migrator: Migrator
    ) throws -> (database: Database, statuses: [MigrationStatus], immutable: Bool) {
        let database = try Database(path: path, mode: .readOnly, busyTimeout: busyTimeout)
        do {
            return (database, try migrator.status(database), false)
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
            return (snapshot, try migrator.status(snapshot), true)
        }
    }

    private static func configureWriter(_ database: Database) throws {
        try database.execute("PRAGMA foreign_keys = ON")
        try database.execute("PRAGMA synchronous = NORMAL")
        // Debian's SQLite is built with SECURE_DELETE on, which overwrites every freed page: a cache
        // eviction or a replaced body then writes its old overflow pages once more, for nothing.
        // FAST still clears deleted content on the pages a change writes anyway. Nothing secret is
        // in freed pages to begin with: the cache stores URLs and headers with their secrets
        // redacted and never a credential, and the file is readable by its owner only (0600).
        try database.execute("PRAGMA secure_delete = FAST")
    }

    /// Switches the file to WAL and checks that SQLite really did.
    private static func enableWAL(_ database: Database, path: String) throws {
        // Changing the journal mode needs an exclusive lock that the busy handler does not always
        // wait for, so a process racing another one to create the file retries here.
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            do {
                let mode = try database.fetchValue("PRAGMA journal_mode = WAL").string ?? ""
                guard mode.lowercased() == "wal" else {
                    throw StoreError.walUnavailable(path: path, journalMode: mode)
                }
                try database.execute("PRAGMA synchronous = NORMAL")
                return
            } catch let error as DatabaseError where error.isBusy && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
    }

    /// Maps SQLite's "not a database" to ``StoreError/notADatabase(path:)``.
    private static func refusingNonDatabase<T>(path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError where error.isNotADatabase {
            throw StoreError.notADatabase(path: path)
        }
    }
}
