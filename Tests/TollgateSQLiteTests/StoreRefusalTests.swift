import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

@Suite("Files a store refuses, untouched")
struct StoreRefusalTests {
    @Test("a file that is not SQLite is refused and left byte for byte as it was")
    func notSQLite() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("notes.sqlite")
        let original = Data("these are my notes, not a database\n".utf8)
        try original.write(to: URL(fileURLWithPath: path))

        #expect(throws: StoreError.notADatabase(path: path)) { try SQLiteStore(path: path) }
        #expect(throws: StoreError.notADatabase(path: path)) { try SQLiteStore.migrationStatus(path: path) }
        #expect(fileBytes(path) == original)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"))
    }

    @Test("a file with SQLite's header but garbage after it is refused, unchanged")
    func corruptAfterHeader() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("damaged.sqlite")
        var bytes = Data("SQLite format 3\0".utf8)
        bytes.append(Data(repeating: 0xAB, count: 4096))
        try bytes.write(to: URL(fileURLWithPath: path))

        #expect(throws: StoreError.notADatabase(path: path)) { try SQLiteStore(path: path) }
        #expect(fileBytes(path) == bytes)
    }

    @Test("a database whose applied migration differs from the library's copy is refused, unchanged")
    func checksumMismatch() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("tampered.sqlite")
        let altered = Migration(version: 1, name: "initial", sql: "CREATE TABLE something_else (id INTEGER);")
        do { _ = try SQLiteStore(path: path, configuration: .init(migrations: [altered])) }
        let before = fileBytes(path)
        let walBefore = fileBytes(path + "-wal")

        let library = try #require(Migration.all.first)
        #expect(throws: StoreRefusal.migrationChecksumMismatch(
            version: 1, name: "initial", recorded: altered.checksum, expected: library.checksum
        )) {
            try SQLiteStore(path: path)
        }
        #expect(fileBytes(path) == before)
        #expect(fileBytes(path + "-wal") == walBefore)
        let tables = try SQLiteStore(path: path, configuration: .init(migrations: [altered])).read { db in
            try db.fetchAll(sql: "SELECT name FROM sqlite_master WHERE name = 'quota_buckets'")
        }
        #expect(tables.isEmpty)
    }

    @Test("a database from a newer library is refused with both versions named, unchanged")
    func newerDatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("newer.sqlite")
        let future = Migration(version: 42, name: "from_the_future", sql: "CREATE TABLE future (id INTEGER);")
        do { _ = try SQLiteStore(path: path, configuration: .init(migrations: Migration.all + [future])) }
        let before = fileBytes(path)
        let walBefore = fileBytes(path + "-wal")

        let libraryVersion = try #require(Migration.all.last?.version)
        let error = #expect(throws: StoreRefusal.self) { try SQLiteStore(path: path) }
        #expect(error == .databaseIsNewer(databaseVersion: 42, libraryVersion: libraryVersion))
        #expect(error?.description.contains("42") == true)
        #expect(error?.description.contains("version \(libraryVersion)") == true)
        #expect(throws: StoreRefusal.databaseIsNewer(databaseVersion: 42, libraryVersion: libraryVersion)) {
            try SQLiteStore.migrationStatus(path: path)
        }
        #expect(fileBytes(path) == before)
        // A read-only look may leave SQLite's empty -wal behind; no frame is ever written to it.
        #expect(fileBytes(path + "-wal") ?? Data() == walBefore ?? Data())
    }

    @Test("asking for the status of a missing file creates nothing")
    func statusOfMissingFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("absent.sqlite")
        let statuses = try SQLiteStore.migrationStatus(path: path)
        #expect(statuses.count == Migration.all.count)
        #expect(statuses.allSatisfy { !$0.isApplied })
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
