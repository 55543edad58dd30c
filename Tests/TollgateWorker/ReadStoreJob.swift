import Foundation
import Tollgate

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `read-store PATH`: opens the store at PATH read-only and reads its snapshot, as a process
/// without privileges (run as root, it first drops to `nobody`, 65534), so file, directory and
/// file-system permissions apply to it.
///
/// Prints `read usage UNITS immutable BOOL` when it worked, else `refused TYPE` and the
/// error's description on the next line.
enum ReadStoreJob {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 1 else { throw StoreRefusal.invalidArgument("read-store PATH") }
        if getuid() == 0 {
            guard setgid(65534) == 0, setuid(65534) == 0 else {
                throw StoreRefusal.invalidArgument("cannot drop privileges: \(String(cString: strerror(errno)))")
            }
        }
        do {
            let store = try SQLiteStore(path: arguments[0], configuration: .init(access: .readOnly))
            _ = try await store.dashboardSnapshot(at: Date())
            let usage = try await store.read { db in
                try db.fetchValue(sql: "SELECT COALESCE(SUM(units), 0) FROM quota_usage").int ?? -1
            }
            print("read usage \(usage) immutable \(store.readsImmutableSnapshot)")
        } catch let error as StoreError {
            print("refused StoreError")
            print(error.description)
        } catch let error as DatabaseError {
            print("refused DatabaseError")
            print(error.description)
        }
    }

}
