import Foundation

/// Runs `tollgate-worker` jobs as real, separate processes on one database file.
enum WorkerProcess {
    struct Result: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// The worker binary, built beside the test binary by `swift build --build-tests`.
    static let executable: URL = {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while directory.pathExtension == "xctest" || ["Contents", "MacOS"].contains(directory.lastPathComponent) {
            directory.deleteLastPathComponent()
        }
        return directory.appending(path: "TollgateWorker")
    }()

    /// Starts one worker process running `job` and returns it, still running.
    static func start(_ job: String, _ arguments: [String]) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        process.executableURL = executable
        process.arguments = [job] + arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, out, err)
    }

    /// Runs `count` workers at once, each with `arguments(index)`, and waits for all of them.
    static func runConcurrently(_ job: String, count: Int, arguments: (Int) -> [String]) async throws -> [Result] {
        let started = try (0..<count).map { try start(job, arguments($0)) }
        return await withTaskGroup(of: (Int, Result).self) { group in
            for (index, (process, out, err)) in started.enumerated() {
                group.addTask {
                    let stdout = out.fileHandleForReading.readDataToEndOfFile()
                    let stderr = err.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    return (index, Result(
                        status: process.terminationStatus,
                        stdout: String(decoding: stdout, as: UTF8.self),
                        stderr: String(decoding: stderr, as: UTF8.self)
                    ))
                }
            }
            var results = [Result?](repeating: nil, count: count)
            for await (index, result) in group { results[index] = result }
            return results.compactMap { $0 }
        }
    }
}
