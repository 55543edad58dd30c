import Foundation
import InMemoryLogging
import Logging

/// A logger that keeps every entry at every level, for asserting what a service logged.
struct LogCapture {
    let handler = InMemoryLogHandler()
    let logger: Logger

    init() {
        var logger = Logger(label: "tollgate.tests") { [handler] _ in handler }
        logger.logLevel = .trace
        self.logger = logger
    }

    /// The messages logged at `level`, in order.
    func messages(at level: Logger.Level) -> [String] {
        handler.entries.filter { $0.level == level }.map { $0.message.description }
    }

    /// Every message with its level, in order.
    var all: [(level: Logger.Level, message: String)] {
        handler.entries.map { ($0.level, $0.message.description) }
    }
}

/// An instant from an ISO 8601 UTC text such as `2026-11-02T07:59:00Z`.
func utc(_ text: String) -> Date {
    guard let date = ISO8601DateFormatter().date(from: text) else { fatalError("bad test date \(text)") }
    return date
}
