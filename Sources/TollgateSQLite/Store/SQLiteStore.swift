import CSQLite
import Foundation
import Logging
import Synchronization
import TollgateCore

/// The SQLite file that holds every piece of Tollgate's state.
///
/// Opening a store applies the migrations that are pending. The store is `Sendable`: one writer
/// connection serialises every write in a `BEGIN IMMEDIATE` transaction, and a reader connection
/// runs reads beside it (WAL mode). Both work on dispatch queues of their own, so waiting for
/// another process's lock never blocks Swift concurrency's cooperative threads.
///
/// ```swift
/// let store = try SQLiteStore(path: "tollgate.sqlite")
/// let version = try await store.read { db in try db.fetchValue(sql: "PRAGMA user_version") }
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
    /// How long a statement waits for another process's lock: what ``StoreError/locked(path:waited:cause:)`` reports.
    let busyTimeout: Duration

    // Internal: maintenance (VACUUM) must run on the writer outside a transaction.
    let writer: SerializedDatabase
    let reader: SerializedDatabase
    private let logger: Logger
    /// Cache entries read recently, served without a read while the file has not changed under them.
    let recentCacheEntries = Mutex(RecentCacheEntries())
    /// Whether anything committed since the last `PRAGMA data_version`, told without a lock; nil
    /// for an in-memory or immutable database (each look then runs the pragma). It borrows the
    /// mapping of the connection that runs the pragma, which this store keeps open.
    let walIndexWatch: WALIndexWatch?
    /// The last data version read, with the WAL-index header read just before it.
    private let lastDataVersion = Mutex<DataVersionMark?>(nil)
    /// How many times `PRAGMA data_version` ran: for tests of when it need not.
    let dataVersionPragmas = Atomic<Int>(0)
    /// The file the path named when the store opened it; nil in memory.
    let openedFile: OpenedFile?

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
    ///   store ``StoreError/notFound(path:)`` and ``StoreRefusal/migrationsPending(path:databaseVersion:libraryVersion:)``),
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
                throw StoreRefusal.invalidArgument("an in-memory store cannot be opened read-only: it would be empty")
            }
            let database = try Database(path: ":memory:", busyTimeout: configuration.busyTimeout)
            try Self.configureWriter(database)
            migrationsAppliedAtOpen = try migrator.migrate(database, now: Date.init)
            writer = SerializedDatabase(database: database, label: "tollgate.store.memory")
            reader = writer
            readsImmutableSnapshot = false
            openedFile = nil
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
            openedFile = OpenedFile(path: path)
        }
        // The connection that runs `PRAGMA data_version` lends its mapping of the WAL index. Only
        // in WAL mode: asked for one otherwise (a read-only store on a rollback-journal file), SQLite
        // would create a -shm file and keep it open until the process ends.
        walIndexWatch = readsImmutableSnapshot ? nil : (try? (isReadOnly ? reader : writer).sync { db -> WALIndexWatch? in
            guard try db.fetchValue(sql: "PRAGMA journal_mode").string?.lowercased() == "wal" else { return nil }
            return WALIndexWatch(db)
        }) ?? nil
        for migration in migrationsAppliedAtOpen {
            logger.debug("applied migration", metadata: [
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
            try DatabaseFile.requireFilePath(path)
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

    /// Refuses to let a new database replace what is at `path` unless it is a Tollgate database, an
    /// empty regular file, or nothing: for commands that start from a new file (`tollgate demo
    /// --replace`), so that they never delete another application's data or a device.
    /// - Parameter path: The path a new database is about to be created at.
    /// - Throws: ``StoreError/notADatabase(path:)``, ``StoreError/notTollgate(path:reason:)``,
    ///   ``StoreError/notARegularFile(path:)`` or ``StoreError/isDirectory(path:)``, saying what is there.
    public static func requireReplaceable(path: String) throws {
        try translatingErrors(path: path, busyTimeout: .seconds(5)) {
            try DatabaseFile.requireFilePath(path)
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return }
            if ((attributes[.size] as? NSNumber)?.intValue ?? 0) == 0 { return }
            try DatabaseFile.requireSQLiteHeader(path: path)
            let ownership = try refusingNonDatabase(path: path) {
                try DatabaseOwnership.of(Database(path: path, mode: .readOnly), firstMigration: Migration.all.first)
            }
            if case .foreign(let reason) = ownership { throw StoreError.notTollgate(path: path, reason: reason) }
        }
    }

    // MARK: Access

    /// Runs `updates` in a `BEGIN IMMEDIATE` transaction on the writer connection: committed when it
    /// returns, rolled back when it throws.
    /// - Parameter updates: The work; it must not keep the `Database`.
    /// - Returns: What `updates` returns.
    /// - Throws: What `updates` throws, or ``DatabaseError``.
    ///
    /// `updates` runs once, or — when another process held the write lock at its first attempt —
    /// twice: the first attempt is rolled back as a whole before the second begins (see
    /// ``writeRerunningAfterBusy`` in the layer), so it must have no effect outside the database.
    public func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        // Any row may change: cache entries read earlier are read again, and so are the rows
        // the connection remembers.
        defer { recentCacheEntries.withLock { $0.forgetAll() } }
        return try await writeKeepingRecentEntries(forgettingRememberedRows: true, updates)
    }

    /// ``write(_:)`` for the store's own operations, which know which cache rows they change:
    /// they forget those recent entries themselves, and ledger, circuit and throttle writes none.
    /// Their statements also keep the connection's ``RememberedRows`` true; SQL the store does not
    /// know (`forgettingRememberedRows`) makes it forget them.
    func writeKeepingRecentEntries<T: Sendable>(
        forgettingRememberedRows: Bool = false, _ updates: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        try requireWritable()
        try requireNotSuspended()
        try requireFileInPlace()
        return try await translatingErrors {
            try await writer.writeRerunningAfterBusy { db in
                var headerBeforeCommit: WALIndexWatch.Header?
                let changesBefore = db.totalChangesCount
                let result: T
                do {
                    result = try db.inTransaction(.immediate) { () throws -> T in
                        // The write lock is held: no other commit can change the header until ours.
                        headerBeforeCommit = self.walIndexWatch?.header()
                        if forgettingRememberedRows {
                            db.rememberedRows.forgetAll()
                        } else {
                            db.rememberedRows.begin(at: headerBeforeCommit)
                        }
                        return try updates(db)
                    }
                } catch {
                    // Rolled back: what the transaction remembered was never written.
                    db.rememberedRows.forgetAll()
                    throw error
                }
                let headerAfterCommit = self.walIndexWatch?.header()
                if let ownCommit = Self.ownCommit(from: headerBeforeCommit, to: headerAfterCommit,
                                                  changedRows: db.totalChangesCount > changesBefore) {
                    self.carryDataVersionMark(past: ownCommit)
                    db.rememberedRows.stand(at: ownCommit.after)
                } else {
                    db.rememberedRows.forgetAll()
                }
                return result
            }
        }
    }

    /// The headers around this connection's own transaction, when nothing but it came between
    /// them. Only a commit that changed rows wrote frames, and so moved the change counter, by one:
    /// after one that changed nothing, any move is another connection's commit, and after one that
    /// did, a move by two is ours and another's.
    static func ownCommit(from inside: WALIndexWatch.Header?, to after: WALIndexWatch.Header?, changedRows: Bool)
        -> (inside: WALIndexWatch.Header, after: WALIndexWatch.Header)? {
        guard let inside, let after else { return nil }
        if changedRows {
            return after.changeCounter == inside.changeCounter &+ 1 ? (inside, after) : nil
        }
        return after == inside ? (inside, after) : nil
    }

    /// This store's own commit changes the WAL-index header but not `PRAGMA data_version`, which
    /// counts other connections' commits only. When the header inside the transaction was the
    /// one the last pragma was read at, and nothing but our commit came since, that pragma's
    /// answer still stands at the new header: the next look needs no read transaction.
    private func carryDataVersionMark(past ownCommit: (inside: WALIndexWatch.Header, after: WALIndexWatch.Header)) {
        let (inside, after) = ownCommit
        guard after != inside else { return }
        lastDataVersion.withLock { mark in
            guard let current = mark, current.header == inside else { return }
            mark = DataVersionMark(header: after, version: current.version)
        }
    }

    /// What has not changed since this store last looked: `PRAGMA data_version` on the connection
    /// whose own commits it does not count (the writer; the reader of a read-only store). Nil when
    /// that connection is busy, so a look never waits.
    ///
    /// While the WAL-index header is the one read just before the last pragma, no connection has
    /// committed since, so that pragma's answer stands without a read transaction.
    func dataVersionIfFree() -> Int64? {
        let header = walIndexWatch?.header()
        if let header, let last = lastDataVersion.withLock({ $0 }), last.header == header { return last.version }
        guard let version = (isReadOnly ? reader : writer).runIfFree({ db in try? db.dataVersion() }) ?? nil else { return nil }
        dataVersionPragmas.add(1, ordering: .relaxed)
        if let header { lastDataVersion.withLock { $0 = DataVersionMark(header: header, version: version) } }
        return version
    }

    /// Runs `updates` in a `BEGIN IMMEDIATE` transaction, blocking the calling thread. For
    /// synchronous callers such as command-line tools; async code uses the async overload.
    /// `updates` runs once: the transaction waits for another process's lock up to the busy timeout.
    /// - Parameter updates: The work; it must not keep the `Database`.
    /// - Returns: What `updates` returns.
    /// - Throws: What `updates` throws, or ``DatabaseError``.
    public func write<T>(_ updates: (Database) throws -> T) throws -> T {
        defer { recentCacheEntries.withLock { $0.forgetAll() } }
        try requireWritable()
        try requireNotSuspended()
        try requireFileInPlace()
        return try Self.translatingErrors(path: locationPath, busyTimeout: busyTimeout) {
            try writer.sync { db in
                db.rememberedRows.forgetAll()
                return try db.inTransaction(.immediate) { try updates(db) }
            }
        }
    }

    /// Runs `value` in a read transaction on the reader connection, beside any write. `value` runs
    /// once, never again.
    /// - Parameter value: The reads; writes are refused (`PRAGMA query_only`).
    /// - Returns: What `value` returns.
    /// - Throws: What `value` throws, or ``DatabaseError``.
    public func read<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try requireNotSuspended()
        return try await translatingErrors(reading: true) {
            try await reader.read { db in try db.inTransaction(.deferred) { try value(db) } }
        }
    }

    /// Runs `value` in a read transaction, blocking the calling thread.
    /// - Parameter value: The reads.
    /// - Returns: What `value` returns.
    /// - Throws: What `value` throws, or ``DatabaseError``.
    public func read<T>(_ value: (Database) throws -> T) throws -> T {
        try requireNotSuspended()
        return try Self.translatingErrors(path: locationPath, busyTimeout: busyTimeout, reading: true) {
            try reader.sync { db in try db.inTransaction(.deferred) { try value(db) } }
        }
    }
}

/// A `PRAGMA data_version` answer and the WAL-index header read just before it.
struct DataVersionMark: Sendable {
    let header: WALIndexWatch.Header
    let version: Int64
}
