import Foundation

/// The throttle's operations on the store: each one is one transaction.
///
/// Each admitted request is a row with its time, so the window survives restarts and is shared
/// by every process that opens the store. ``SQLiteStore`` implements it; another backend
/// implements the same operations and the throttle works over it unchanged.
public protocol ThrottleStorage: Sendable {
    /// Admits the request when the endpoint's window has room, and records it, atomically across
    /// every process that shares the store.
    ///
    /// The same transaction writes the limit to `throttle_limits` (for the `throttle_status`
    /// view) and prunes the endpoint's requests that left the window. Requests stamped later than
    /// `at` (the wall clock was set back) count as made at `at`, so they hold the endpoint for one
    /// window at most.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - limit: Its limit.
    ///   - at: The time of the request.
    /// - Returns: Admitted, or refused with the time until the window has room.
    /// - Throws: `StoreRefusal.invalidArgument` for an invalid limit; `DatabaseError` when SQLite fails.
    func admitRequest(endpoint: String, limit: ThrottleLimit, at: Date) async throws -> ThrottleAdmission

    /// Reads an endpoint's window without admitting anything.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - limit: Its limit.
    ///   - at: The time to read the window at.
    /// - Returns: The requests in the window and the time until it has room.
    /// - Throws: `DatabaseError` when SQLite fails.
    func throttleWindow(endpoint: String, limit: ThrottleLimit, at: Date) async throws -> ThrottleWindow

    /// Forgets the recorded requests of one endpoint, or of all, and records the reset in
    /// `admin_events`.
    /// - Parameters:
    ///   - endpoint: The endpoint, or nil for every endpoint.
    ///   - at: The time of the reset.
    /// - Returns: How many recorded requests were forgotten.
    /// - Throws: `DatabaseError` when SQLite fails.
    @discardableResult
    func resetThrottle(endpoint: String?, at: Date) async throws -> Int
}
