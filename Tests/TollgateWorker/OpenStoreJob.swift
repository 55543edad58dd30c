import Foundation
import Tollgate

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `open-store PATH`: opens the store at PATH and charges one unit, as a process without
/// privileges: run as root, it first drops to the user and group `nobody` (65534), so file and
/// directory permissions apply to it as they do to an ordinary user.
///
/// Prints `charged ID` when both worked, else `refused TYPE readOnly BOOL full BOOL` on one line
/// and the error's description on the next.
enum OpenStoreJob {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 1 else { throw StoreRefusal.invalidArgument("open-store PATH") }
        if getuid() == 0 {
            guard setgid(65534) == 0, setuid(65534) == 0 else {
                throw StoreRefusal.invalidArgument("cannot drop privileges: \(String(cString: strerror(errno)))")
            }
        }
        do {
            let store = try SQLiteStore(path: arguments[0])
            let outcome = try await store.reserveQuota(QuotaReservationRequest(
                bucket: "fault", endpoint: "fault.list", cost: 1, configuredLimit: 100, at: Date()
            ))
            guard case .reserved(let charge) = outcome else { throw StoreRefusal.invalidArgument("refused by quota") }
            print("charged \(charge.reservationID)")
        } catch let error as DatabaseError {
            print("refused DatabaseError readOnly \(error.isReadOnly) full \(error.isFull)")
            print(error.description)
        } catch let error as StoreError {
            let (readOnly, full) = switch error {
            case .readOnly: (true, false)
            case .diskFull: (false, true)
            default: (false, false)
            }
            print("refused StoreError readOnly \(readOnly) full \(full)")
            print(error.description)
        }
    }
}
