import Foundation

/// One row of `admin_events`: an operator's change that has no ledger or history of its own
/// (a throttle reset, a cache prune, clear or vacuum), kept so that nothing is deleted silently.
public struct AdminEvent: Sendable, Hashable, Codable {
    /// The row's id, increasing in the order the events were recorded.
    public var id: Int64
    /// When it was recorded.
    public var at: Date
    /// What was operated on: `throttle`, `cache` or `database`.
    public var subject: String
    /// The endpoint it concerned, or nil for all of them.
    public var target: String?
    /// What was done, such as `reset`, `prune`, `clear` or `vacuum`.
    public var action: String
    /// What it changed, in words.
    public var detail: String?

    /// Creates an event.
    /// - Parameters:
    ///   - id: The row's id.
    ///   - at: When it was recorded.
    ///   - subject: What was operated on.
    ///   - target: The endpoint, or nil for all.
    ///   - action: What was done.
    ///   - detail: What it changed.
    public init(id: Int64, at: Date, subject: String, target: String?, action: String, detail: String?) {
        self.id = id
        self.at = at
        self.subject = subject
        self.target = target
        self.action = action
        self.detail = detail
    }
}
