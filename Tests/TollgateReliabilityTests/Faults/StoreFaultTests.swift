import Foundation
import Testing
import Tollgate
import TollgateTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Faults: full disk, read-only files, damaged and foreign files")
struct StoreFaultTests {
    static let now = utc("2027-03-10T18:00:00Z")

    /// A file with a few charges and a cache entry in it, closed (so its WAL is checkpointed away).
    static func populatedFile(in directory: TemporaryDirectory, name: String = "faults.sqlite") async throws -> String {
        let path = directory.path(name)
        let store = try SQLiteStore(path: path)
        for _ in 0..<3 {
            _ = try await store.reserveQuota(QuotaReservationRequest(
                bucket: "fault", endpoint: "fault.list", cost: 2, configuredLimit: 100, at: now
            ))
        }
        _ = try await store.storeCacheEntry(
            cacheEntry(key: "kept", bodySize: 2_000), retention: retention, activity: CacheActivity()
        )
        return path
    }

    static let retention = CacheRetention(maxEntries: 1_000, maxTotalBodyBytes: 1 << 40, expiredBeforeMs: 0)

    static func cacheEntry(key: String, bodySize: Int) -> NewCacheEntry {
        NewCacheEntry(
            resourceKey: key, variantKey: "", endpoint: "fault.list", method: "GET", url: "https://example.com/\(key)",
            vary: nil, status: 200, headers: [], etag: "\"\(key)\"", lastModified: nil, freshUntilMs: nil,
            nowMs: Int64(now.timeIntervalSince1970 * 1000), body: Data(repeating: 7, count: bodySize)
        )
    }

    /// What the populated file holds, so a test can check that a fault changed none of it.
    static func contents(_ path: String) async throws -> [String] {
        let store = try SQLiteStore(path: path)
        #expect(try StoreInvariants.integrity(store) == "ok")
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        let usage = try await store.quotaUsage(on: PacificDay(containing: now)).map { "\($0.endpoint)=\($0.units)" }
        let totals = try await store.cacheTotals()
        return usage + ["cache \(totals.entries) \(totals.bodyBytes)"]
    }

    @Test("a full disk (max_page_count) fails the write with SQLITE_FULL, rolls it back and corrupts nothing")
    func diskFull() async throws {
        let directory = try TemporaryDirectory()
        let path = try await Self.populatedFile(in: directory)
        let before = try await Self.contents(path)
        let pages = try await SQLiteStore(path: path).read { db in try db.fetchValue(sql: "PRAGMA page_count").int ?? 0 }

        let capped = try SQLiteStore(path: path, configuration: .init(maximumPageCount: pages + 4))
        var failure: DatabaseError?
        for index in 0..<20 {
            do {
                _ = try await capped.storeCacheEntry(
                    Self.cacheEntry(key: "big-\(index)", bodySize: 64 * 1024), retention: Self.retention,
                    activity: CacheActivity()
                )
            } catch StoreError.diskFull(let failedPath, let cause) {
                #expect(failedPath == path)
                failure = cause
                break
            }
        }
        let error = try #require(failure, "the capped file never filled up")
        #expect(error.isFull)
        #expect(StoreError.diskFull(path: path, cause: error).description.contains("is full"))
        // Small writes that fit still work, and the ledger still adds up.
        #expect(try StoreInvariants.integrity(capped) == "ok")
        #expect(try await capped.quotaLedgerDiscrepancies().isEmpty)
        #expect(try StoreInvariants.cacheInconsistencies(capped).isEmpty)
        #expect(try await Self.contents(path) == before)
        #expect(throws: StoreRefusal.self) { try SQLiteStore(path: path, configuration: .init(maximumPageCount: 0)) }

        // Without the cap the next write goes through.
        let uncapped = try SQLiteStore(path: path)
        _ = try await uncapped.storeCacheEntry(
            Self.cacheEntry(key: "after", bodySize: 64 * 1024), retention: Self.retention, activity: CacheActivity()
        )
        #expect(try await uncapped.cacheTotals().entries == 2)
    }

    @Test("a file that is not SQLite is refused with a clear error and left byte for byte as it was")
    func notSQLite() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("notes.txt")
        var random = SeededGenerator(seed: 7)
        let bytes = Data((0..<10_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(throws: StoreError.notADatabase(path: path)) { try SQLiteStore(path: path) }
        #expect(StoreError.notADatabase(path: path).description.contains("not an SQLite file"))
        #expect(fileBytes(path) == bytes)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test("a truncated database is refused with a typed error, and the file is not written")
    func truncated() async throws {
        let directory = try TemporaryDirectory()
        let path = try await Self.populatedFile(in: directory)
        do {
            let store = try SQLiteStore(path: path)
            for index in 0..<40 {
                _ = try await store.storeCacheEntry(
                    Self.cacheEntry(key: "filler-\(index)", bodySize: 8_000), retention: Self.retention,
                    activity: CacheActivity()
                )
            }
        }
        let whole = try #require(fileBytes(path))
        let cut = whole.prefix(whole.count / 2)
        try cut.write(to: URL(fileURLWithPath: path))

        do {
            _ = try SQLiteStore(path: path)
            Issue.record("a truncated file was opened")
        } catch let error as StoreError {
            guard case .truncated(let refusedPath, let expected, let actual) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(refusedPath == path)
            #expect(expected == Int64(whole.count))
            #expect(actual == Int64(cut.count))
            #expect(error.description.contains("truncated"))
        }
        #expect(throws: StoreError.self) { try SQLiteStore.migrationStatus(path: path) }
        #expect(fileBytes(path) == cut, "the refused file was written")
    }

    @Test("a database written by a newer Tollgate is refused with both versions named, and not changed")
    func newerVersion() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("newer.sqlite")
        let future = Migration(version: 99, name: "future", sql: "CREATE TABLE future_things (id INTEGER PRIMARY KEY) STRICT;")
        do {
            let newer = try SQLiteStore(path: path, configuration: .init(migrations: Migration.all + [future]))
            _ = try await newer.reserveQuota(QuotaReservationRequest(
                bucket: "fault", endpoint: "fault.list", cost: 1, configuredLimit: 100, at: Self.now
            ))
        }
        let bytes = try #require(fileBytes(path))
        do {
            _ = try SQLiteStore(path: path)
            Issue.record("a newer database was opened")
        } catch let error as StoreRefusal {
            guard case .databaseIsNewer(let databaseVersion, let libraryVersion) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(databaseVersion == 99)
            #expect(libraryVersion == Migration.all.map(\.version).max())
            #expect(error.description.contains("99") && error.description.contains("\(libraryVersion)"))
        }
        #expect(fileBytes(path) == bytes)
    }

    // MARK: Read-only file and directory

    /// Runs the `open-store` worker, which drops root privileges, on `path`.
    static func openAsUnprivileged(_ path: String) async throws -> (summary: String, description: String) {
        let result = try await WorkerProcess.runConcurrently("open-store", count: 1) { _ in [path] }[0]
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        return (lines.first ?? "", lines.dropFirst().first ?? "")
    }

    @Test("a read-only file refuses every write with a typed read-only error, and keeps what it holds")
    func readOnlyFile() async throws {
        let directory = try TemporaryDirectory()
        let path = try await Self.populatedFile(in: directory)
        let before = try await Self.contents(path)
        let bytes = try #require(fileBytes(path))
        // The directory stays writable (for the -wal and -shm files); the file is not.
        chmod(directory.url.path, 0o777)
        chmod(path, 0o444)
        defer { chmod(path, 0o600); chmod(directory.url.path, 0o755) }

        let (summary, description) = try await Self.openAsUnprivileged(path)
        #expect(summary == "refused StoreError readOnly true full false", "\(summary) \(description)")
        #expect(description.lowercased().contains("readonly") || description.lowercased().contains("read-only")
                    || description.contains("unable to open"), "\(description)")
        #expect(fileBytes(path) == bytes)
        chmod(path, 0o600)
        #expect(try await Self.contents(path) == before)
    }

    @Test("a read-only directory (no -wal can be created) refuses the store with a typed error, and keeps the file")
    func readOnlyDirectory() async throws {
        let directory = try TemporaryDirectory()
        let folder = directory.url.appending(path: "locked").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let path = try await Self.populatedFile(in: directory, name: "locked/faults.sqlite")
        let before = try await Self.contents(path)
        let bytes = try #require(fileBytes(path))
        // The file stays writable by the worker's user; the directory is not.
        if getuid() == 0 { chown(path, 65534, 65534) }
        chmod(folder, 0o555)
        defer { chmod(folder, 0o755); if getuid() == 0 { chown(path, 0, 0) } }

        let (summary, description) = try await Self.openAsUnprivileged(path)
        #expect(summary == "refused StoreError readOnly true full false", "\(summary) \(description)")
        #expect(!description.isEmpty)
        #expect(fileBytes(path) == bytes)
        chmod(folder, 0o755)
        if getuid() == 0 { chown(path, 0, 0) }
        #expect(try await Self.contents(path) == before)
    }

    // MARK: Reading a file that cannot be written

    /// Runs the `read-store` worker, which drops root privileges and opens `path` read-only.
    static func readAsUnprivileged(_ path: String) async throws -> (summary: String, description: String) {
        let result = try await WorkerProcess.runConcurrently("read-store", count: 1) { _ in [path] }[0]
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        return (lines.first ?? "", lines.dropFirst().first ?? "")
    }

    @Test("a read-only store reads a file its user cannot write (0400), writes nothing and needs no write lock")
    func readOnlyStoreOnReadOnlyFile() async throws {
        let directory = try TemporaryDirectory()
        let path = try await Self.populatedFile(in: directory)
        let bytes = try #require(fileBytes(path))
        chmod(directory.url.path, 0o777)
        if getuid() == 0 { chown(path, 65534, 65534) }
        chmod(path, 0o400)
        defer { chmod(path, 0o600); chmod(directory.url.path, 0o755); if getuid() == 0 { chown(path, 0, 0) } }

        let (summary, description) = try await Self.readAsUnprivileged(path)
        #expect(summary == "read usage 6 immutable false", "\(summary) \(description)")
        #expect(fileBytes(path) == bytes)
    }

    @Test("a read-only store reads a file in a read-only directory (no -shm can be made) as an immutable snapshot")
    func readOnlyStoreInReadOnlyDirectory() async throws {
        let directory = try TemporaryDirectory()
        let folder = directory.url.appending(path: "locked").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let path = try await Self.populatedFile(in: directory, name: "locked/faults.sqlite")
        let bytes = try #require(fileBytes(path))
        chmod(directory.url.path, 0o755)
        if getuid() == 0 { chown(path, 65534, 65534); chown(folder, 65534, 65534) }
        chmod(path, 0o400)
        chmod(folder, 0o500)
        defer {
            chmod(folder, 0o755); chmod(path, 0o600)
            if getuid() == 0 { chown(path, 0, 0); chown(folder, 0, 0) }
        }

        let (summary, description) = try await Self.readAsUnprivileged(path)
        #expect(summary == "read usage 6 immutable true", "\(summary) \(description)")
        #expect(fileBytes(path) == bytes)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"))

        // Opened for writing, the same file is refused with an error that says what to do.
        let (refusal, text) = try await Self.openAsUnprivileged(path)
        #expect(refusal == "refused StoreError readOnly true full false", "\(refusal) \(text)")
        #expect(text.contains("cannot be written") && text.contains("write access"), "\(text)")
    }

    @Test("a read-only file system (a read-only bind mount, in a mount namespace of its own) is read, and writes are refused with a typed error",
          .enabled(if: MountNamespace.isAvailable, "needs root and unshare(1) to make a read-only mount; not available here"))
    func readOnlyFileSystem() async throws {
        let directory = try TemporaryDirectory()
        let folder = directory.url.appending(path: "mounted").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let path = try await Self.populatedFile(in: directory, name: "mounted/faults.sqlite")
        let bytes = try #require(fileBytes(path))
        // The worker runs as nobody: only the mount may stop it from writing.
        chown(path, 65534, 65534)
        chown(folder, 65534, 65534)
        defer { chown(path, 0, 0); chown(folder, 0, 0) }
        let worker = WorkerProcess.executable.path
        let result = try MountNamespace.run("""
            mount --bind '\(folder)' '\(folder)' && mount -o remount,bind,ro '\(folder)' \
            && ! touch '\(folder)/probe' 2>/dev/null \
            && '\(worker)' read-store '\(path)' && '\(worker)' open-store '\(path)'
            """)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "read usage 6 immutable true", "\(result.stdout)")
        #expect(lines.dropFirst().first == "refused StoreError readOnly true full false", "\(result.stdout)")
        #expect(fileBytes(path) == bytes)
    }

    @Test("at its page cap (a full disk), a file still clears its cache, and the freed pages take new entries")
    func clearOnFullFile() async throws {
        let directory = try TemporaryDirectory()
        let path = try await Self.populatedFile(in: directory)
        let pages = try await SQLiteStore(path: path).read { db in try db.fetchValue(sql: "PRAGMA page_count").int ?? 0 }
        let capped = try SQLiteStore(path: path, configuration: .init(maximumPageCount: pages + 40))
        var activity = CacheActivity()
        var full = false
        for index in 0..<40 where !full {
            do {
                _ = try await capped.storeCacheEntry(
                    Self.cacheEntry(key: "fill-\(index)", bodySize: 16 * 1024), retention: Self.retention,
                    activity: CacheActivity()
                )
            } catch StoreError.diskFull {
                full = true
            }
        }
        try #require(full, "the capped file never filled up")
        // Statistics waiting to be written need pages of their own (about 40 KB of new rows): they
        // fit only into the pages the delete frees, so the delete must come first.
        for index in 0..<300 {
            activity.count(CacheStatisticsCounts(misses: 1), for: CacheStatisticsKey(
                pacificDate: "2031-01-01", endpoint: "endpoint-\(index)-" + String(repeating: "x", count: 120)
            ))
        }
        let cleared = try await capped.clearCache(endpoint: nil, activity: activity, at: Self.now)
        #expect(cleared.entries > 1)
        _ = try await capped.storeCacheEntry(
            Self.cacheEntry(key: "after", bodySize: 16 * 1024), retention: Self.retention, activity: CacheActivity()
        )
        #expect(try await capped.cacheTotals().entries == 1)
        #expect(try StoreInvariants.integrity(capped) == "ok")
        #expect(try await capped.quotaLedgerDiscrepancies().isEmpty)
    }
}

