import Foundation
import TollgateCore

extension SQLiteStore: ThrottleStorage {
    public func admitRequest(endpoint: String, limit: ThrottleLimit, at: Date) async throws -> ThrottleAdmission {
        try await writeKeepingRecentEntries { db in try ThrottleTable.admit(db, endpoint: endpoint, limit: limit, at: at) }
    }

    public func throttleWindow(endpoint: String, limit: ThrottleLimit, at: Date) async throws -> ThrottleWindow {
        try await read { db in try ThrottleTable.window(db, endpoint: endpoint, limit: limit, at: at) }
    }

    @discardableResult
    public func resetThrottle(endpoint: String?, at: Date) async throws -> Int {
        try await writeKeepingRecentEntries { db in try ThrottleTable.reset(db, endpoint: endpoint, at: at) }
    }
}
