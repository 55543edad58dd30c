import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a program to its end and collects what it printed.
public enum ChildProcess {
    /// Runs `executable` with `arguments`, no standard input, and waits for it.
    /// - Parameters:
    ///   - executable: The program.
    ///   - arguments: Its arguments.
    ///   - environment: The whole environment to give it; the inherited one when nil.
    ///   - timeLimit: When it is killed (SIGKILL), so a program that hangs fails its test rather
    ///     than hanging the whole run.
    /// - Returns: Its exit status (9 for a program killed at the limit) and what it printed.
    /// - Throws: When the program cannot be started.
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, timeLimit: Double = 180
    ) throws -> WorkerProcess.Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        let limit = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeLimit, execute: limit)
        defer { limit.cancel() }
        // Read before waiting, so a full pipe cannot deadlock the child.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return WorkerProcess.Result(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self)
        )
    }
}
