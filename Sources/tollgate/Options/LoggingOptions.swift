import ArgumentParser
import Foundation
import Logging
import Synchronization

/// `--verbose` and `--log-level`: the command line is quiet by default, and the library's logs
/// reach standard error only when asked for (or when `TOLLGATE_LOG_LEVEL` names a level).
struct LoggingOptions: ParsableArguments {
    @Flag(name: [.customShort("v"), .long], help: "Show the library's log lines on standard error (level info).")
    var verbose = false

    @Option(help: ArgumentHelp(
        "Show log lines at this level and above: trace, debug, info, notice, warning, error, critical. Default: $TOLLGATE_LOG_LEVEL, else error.",
        valueName: "level"
    ))
    var logLevel: String?

    func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel.lowercased()) == nil {
            throw ValidationError("--log-level '\(logLevel)' is not one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
    }

    /// The level in force: `--log-level`, else `--verbose` (info), else `TOLLGATE_LOG_LEVEL`, else `quietLevel`.
    func level(quietLevel: Logger.Level, environment: [String: String] = ProcessInfo.processInfo.environment) -> Logger.Level {
        if let logLevel, let level = Logger.Level(rawValue: logLevel.lowercased()) { return level }
        if verbose { return .info }
        if let text = environment["TOLLGATE_LOG_LEVEL"], let level = Logger.Level(rawValue: text.lowercased()) {
            return level
        }
        return quietLevel
    }

    /// Sends every logger of the process (the library's, Hummingbird's) to standard error at the
    /// level in force, and returns the command's own logger.
    /// - Parameter quietLevel: The level when nothing asks for more: `error` for one-shot
    ///   commands, `warning` for the proxy, a server whose warnings are its operator's business.
    @discardableResult
    func bootstrap(label: String = "tollgate", quietLevel: Logger.Level = .error) -> Logger {
        let level = level(quietLevel: quietLevel)
        LoggingOptions.bootstrapOnce.withLock { done in
            guard !done else { return }
            done = true
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }

    /// `LoggingSystem.bootstrap` may run once per process.
    private static let bootstrapOnce = Mutex(false)
}
