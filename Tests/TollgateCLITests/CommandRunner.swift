import Foundation
import TollgateTestSupport

/// Runs a built executable of this package (or any program) and captures what it printed.
struct CommandResult: Sendable {
    let status: Int32
    let stdout: String
    let stderr: String
}

enum CommandRunner {
    /// The directory of the test binary, where SwiftPM also puts the package's executables.
    static let productsDirectory: URL = {
        PortableSockets.productsDirectory
    }()

    static var tollgate: URL { productsDirectory.appending(path: "tollgate") }

    /// Runs `executable` with `arguments`; extra environment entries override the inherited ones.
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        var merged = ProcessInfo.processInfo.environment
        merged["TOLLGATE_DB"] = nil
        merged.merge(environment) { $1 }
        let result = try ChildProcess.run(executable, arguments, environment: merged)
        return CommandResult(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    static func tollgate(_ arguments: String..., environment: [String: String] = [:]) throws -> CommandResult {
        try run(tollgate, arguments, environment: environment)
    }

    static func sqlite3(_ path: String, _ sql: String) throws -> CommandResult {
        try run(URL(fileURLWithPath: "/usr/bin/env"), ["sqlite3", "-readonly", path, sql])
    }
}
