import InMemoryLogging
import Logging

/// A logger that keeps every entry, down to trace, for assertions on log lines.
struct RecordingLogger {
    let handler = InMemoryLogHandler()

    var logger: Logger {
        var logger = Logger(label: "tollgate.tests") { _ in handler }
        logger.logLevel = .trace
        return logger
    }

    var entries: [InMemoryLogHandler.Entry] { handler.entries }

    /// Every message, in order.
    var messages: [String] { entries.map { $0.message.description } }
}
