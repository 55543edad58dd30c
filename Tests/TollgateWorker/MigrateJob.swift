import TollgateCore
import TollgateSQLite

/// `migrate PATH`: opens the store (which migrates) and prints the versions this process applied.
enum MigrateJob {
    static func run(_ arguments: [String]) throws {
        guard let path = arguments.first else { throw StoreRefusal.invalidArgument("migrate needs a path") }
        let store = try SQLiteStore(path: path)
        print("applied", store.migrationsAppliedAtOpen.map { String($0.version) }.joined(separator: ","))
    }
}
