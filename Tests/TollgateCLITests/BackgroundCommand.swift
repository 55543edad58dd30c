import Foundation
import Testing
import TollgateTestSupport

/// A command started in the background (the proxy), whose first line of output the test reads and
/// which it stops with a signal at the end.
final class BackgroundCommand {
    let process = Process()
    private let out = Pipe()
    private let err = Pipe()

    /// - Parameter extraEnvironment: Entries that override the inherited environment (an empty value stays set).
    init(_ executable: URL, _ arguments: [String], environment extraEnvironment: [String: String] = [:]) throws {
        process.executableURL = executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["TOLLGATE_DB"] = nil
        environment["TOLLGATE_ADMIN_TOKEN"] = nil
        environment.merge(extraEnvironment) { $1 }
        process.environment = environment
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    /// The first line the command printed; nil when it exited first.
    func firstLine() -> String? {
        var bytes: [UInt8] = []
        let handle = out.fileHandleForReading
        while true {
            let byte = handle.readData(ofLength: 1)
            guard let value = byte.first else { return nil }
            if value == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(value)
        }
    }

    /// Sends `number`, waits up to `seconds` for the exit (past them the command is killed), and
    /// returns the status, whether it exited in time, and what it wrote to stderr.
    func signal(_ number: Int32, within seconds: Double) -> (status: Int32, inTime: Bool, stderr: String) {
        if process.isRunning { kill(process.processIdentifier, number) }
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let inTime = !process.isRunning
        if !inTime { kill(process.processIdentifier, SIGKILL) }
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, inTime, String(decoding: stderr, as: UTF8.self))
    }

    /// Sends SIGINT (Ctrl-C), waits for the exit and returns the status and what it wrote to stderr.
    func interrupt() -> (status: Int32, stderr: String) {
        if process.isRunning { process.interrupt() }
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stderr, as: UTF8.self))
    }
}

/// What `curl -i` got: the status, the header fields (names lowercased) and the body.
struct CurlResponse {
    let status: Int
    let headers: [String: String]
    let body: String

    /// Runs `curl -sS -i` with extra arguments and parses its output.
    static func fetch(_ url: String, _ extra: [String] = []) throws -> CurlResponse {
        let result = try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["curl", "-sS", "-i", "--max-time", "10"] + extra + [url])
        guard result.status == 0 else { throw CurlFailure(message: "curl exited \(result.status): \(result.stderr)") }
        let parts = result.stdout.components(separatedBy: "\r\n\r\n")
        let head = parts.first ?? ""
        let body = parts.dropFirst().joined(separator: "\r\n\r\n")
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return CurlResponse(status: status, headers: headers, body: body)
    }
}

struct CurlFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

extension BackgroundCommand {
    /// Starts `tollgate proxy` on a free loopback port with `arguments` after the listen address,
    /// and returns it with its base URL, read from the banner it prints once it listens.
    static func proxy(_ arguments: [String]) throws -> (BackgroundCommand, String) {
        let proxy = try BackgroundCommand(CommandRunner.tollgate, ["proxy", "--listen", "127.0.0.1:0"] + arguments)
        let banner = try #require(proxy.firstLine(), "the proxy exited before listening")
        let base = String(try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }))
        return (proxy, base)
    }
}

extension CommandRunner {
    /// Whether curl and sqlite3, which the proxy's tests drive, are installed; records an issue when not.
    static func curlAndSQLiteInstalled() -> Bool {
        guard isInstalled("curl"), isInstalled("sqlite3") else {
            Issue.record("curl and sqlite3 are needed: .ci/run installs them")
            return false
        }
        return true
    }

    /// How many usage totals differ from the sum of their events, as sqlite3 counts them: "0" for
    /// a ledger whose totals are what its events say.
    static func totalsDifferingFromEvents(_ database: String) throws -> String {
        try sqliteValue(database, """
            SELECT COUNT(*) FROM (SELECT pacific_date, bucket, endpoint, SUM(units) AS units FROM quota_events
                                  GROUP BY 1, 2, 3) AS sums
            JOIN quota_usage USING (pacific_date, bucket, endpoint) WHERE sums.units <> quota_usage.units
            """)
    }

    /// One value from `sqlite3`, trimmed.
    static func sqliteValue(_ path: String, _ sql: String) throws -> String {
        try sqlite3(path, sql).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether a program is on the PATH.
    static func isInstalled(_ program: String) -> Bool {
        (try? run(URL(fileURLWithPath: "/usr/bin/env"), ["sh", "-c", "command -v \(program)"]).status) == 0
    }
}
