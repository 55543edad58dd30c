import ArgumentParser
import Foundation
import Tollgate

/// The one way `tollgate` reports an error: one line on standard error, `tollgate: WHAT`, and the
/// exit status README lists. Every command's errors reach it: ``TollgateCommand/main()`` catches
/// whatever a command throws, and argument-parser's own messages (usage errors, through
/// `ValidationError`) carry the same prefix.
///
/// | Status | When |
/// |---|---|
/// | 0 | done (`get`: answered, any HTTP status) |
/// | 22 | `get --fail`, and the final status is 400 or more |
/// | 3 | throttled |
/// | 4 | circuit open |
/// | 5 | quota spent |
/// | 6 | network failure with nothing stored, a body cut short, a certificate that does not verify |
/// | 130 | interrupted (Ctrl-C, SIGTERM) |
/// | 64 | bad arguments, or a request that cannot be sent |
/// | 1 | anything else (a database that cannot be opened or written, say) |
enum CommandErrors {
    /// The start of every error line.
    static let prefix = "tollgate: "

    /// `get --fail` with a final status of 400 or more.
    static let httpErrorStatus: Int32 = 22
    static let throttledStatus: Int32 = 3
    static let circuitOpenStatus: Int32 = 4
    static let quotaExceededStatus: Int32 = 5
    static let networkStatus: Int32 = 6
    static let interruptedStatus: Int32 = 130
    /// Bad arguments: argument-parser's `ExitCode.validationFailure`.
    static let usageStatus: Int32 = ExitCode.validationFailure.rawValue
    static let failureStatus: Int32 = ExitCode.failure.rawValue

    /// The exit status for an error.
    static func exitStatus(for error: any Error) -> Int32 {
        switch error {
        case let code as ExitCode: code.rawValue
        case let failure as CommandFailure: exitStatus(for: failure.error)
        case let failure as GateFailure: exitStatus(for: failure.error)
        case TollgateError.throttled: throttledStatus
        case TollgateError.circuitOpen: circuitOpenStatus
        case TollgateError.quotaExceeded: quotaExceededStatus
        case HTTPTransportError.invalidRequest: usageStatus
        case is HTTPTransportError: networkStatus
        case is CancellationError: interruptedStatus
        // Argument-parser's own: a usage error (64), a help request (0); any other error is 1.
        default: TollgateCommand.exitCode(for: error).rawValue
        }
    }

    /// An error as its line says it, after the prefix.
    static func message(for error: any Error) -> String {
        switch error {
        case let failure as CommandFailure: failure.message
        case let failure as GateFailure: message(for: failure.error)
        case is CancellationError: "interrupted"
        default: "\(error)"
        }
    }

    /// Prints the error's line on standard error.
    static func report(_ error: any Error) {
        printError(prefix + message(for: error))
    }

    /// Reports `error` and exits with its status. An `ExitCode` was reported already (or needs no
    /// line); argument-parser's own errors print with their usage, or the help on standard output.
    static func exit(with error: any Error) -> Never {
        if let code = error as? ExitCode { Foundation.exit(code.rawValue) }
        if !isTollgate(error), TollgateCommand.exitCode(for: error) != .failure {
            TollgateCommand.exit(withError: error)
        }
        report(error)
        Foundation.exit(exitStatus(for: error))
    }

    /// Whether the error is one of the library's or the tool's, not argument-parser's.
    private static func isTollgate(_ error: any Error) -> Bool {
        error is CommandFailure || error is GateFailure || error is TollgateError || error is HTTPTransportError
            || error is CancellationError
    }
}

/// An error with what the command says around it: what it concerns (an endpoint) before, a hint
/// and what it cost after.
struct CommandFailure: Error {
    /// The error.
    let error: any Error
    /// What it concerns, such as the endpoint: `tollgate: SUBJECT: …`.
    var subject: String?
    /// What to try, in parentheses after the message.
    var hint: String?
    /// What happened regardless, after a `·`, such as the units charged.
    var detail: String?

    /// The line after the prefix.
    var message: String {
        (subject.map { "\($0): " } ?? "") + CommandErrors.message(for: error) + (hint.map { " (\($0))" } ?? "")
            + (detail.map { " · \($0)" } ?? "")
    }
}

/// Writes one line on standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
