/// A database's schema history checked against the migrations a library knows: the one rule
/// both stores' migrators follow before they write anything.
public enum MigrationHistory {
    /// Refuses a history this library cannot continue.
    /// - Parameters:
    ///   - recordedChecksums: The checksum the database recorded for each applied version.
    ///   - migrations: The library's migrations, oldest first.
    /// - Throws: `StoreRefusal.databaseIsNewer` when the database has a version the library does
    ///   not know (a newer library migrated it); `StoreRefusal.migrationChecksumMismatch` when a
    ///   version was applied from a different script than the library's.
    public static func validate(recordedChecksums: [Int: String], against migrations: [Migration]) throws(StoreRefusal) {
        let known = Set(migrations.map(\.version))
        if let newest = recordedChecksums.keys.max(), !recordedChecksums.keys.allSatisfy(known.contains) {
            throw StoreRefusal.databaseIsNewer(databaseVersion: newest, libraryVersion: migrations.last?.version ?? 0)
        }
        for migration in migrations {
            if let recorded = recordedChecksums[migration.version], recorded != migration.checksum {
                throw StoreRefusal.migrationChecksumMismatch(
                    version: migration.version, name: migration.name, recorded: recorded, expected: migration.checksum
                )
            }
        }
    }
}
