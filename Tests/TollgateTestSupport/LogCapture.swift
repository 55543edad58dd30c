import Foundation
import InMemoryLogging
import Logging

/// A logger that keeps every entry at every level, for asserting what a service logged.
public struct LogCapture: Sendable {
    /// The handler that holds the entries.
    public let handler = InMemoryLogHandler()
    /// A logger writing into ``handler`` at trace level.
    public let logger: Logger

    public init() {
        var logger = Logger(label: "tollgate.tests") { [handler] _ in handler }
        logger.logLevel = .trace
        self.logger = logger
    }

    /// Every entry, in order.
    public var entries: [InMemoryLogHandler.Entry] { handler.entries }

    /// Every message, in order.
    public var messages: [String] { entries.map { $0.message.description } }

    /// The messages logged at `level`, in order.
    public func messages(at level: Logger.Level) -> [String] {
        entries.filter { $0.level == level }.map { $0.message.description }
    }

    /// Every message with its level, in order.
    public var all: [(level: Logger.Level, message: String)] {
        entries.map { ($0.level, $0.message.description) }
    }
}

/// An instant from an ISO 8601 text such as `2026-11-02T07:59:00Z`.
public func utc(_ text: String) -> Date {
    guard let date = ISO8601DateFormatter().date(from: text) else { fatalError("bad test date \(text)") }
    return date
}
