import Foundation

/// Runs `tollgate-worker` jobs as real, separate processes on one database file.
public enum WorkerProcess {
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// The worker binary, built beside the test binary by `swift build --build-tests`.
    public static let executable: URL = {
        PortableSockets.productsDirectory.appending(path: "TollgateWorker")
    }()

    /// Starts one worker process running `job` and returns it, still running.
    public static func start(_ job: String, _ arguments: [String]) throws -> (Process, Pipe, Pipe) {
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
    ///
    /// Pipes are drained and processes awaited on dispatch threads, never on Swift concurrency's
    /// cooperative pool, so tasks started beside the workers still run on a 2-core machine.
    public static func runConcurrently(_ job: String, count: Int, arguments: (Int) -> [String]) async throws -> [Result] {
        let started = try (0..<count).map { try start(job, arguments($0)) }
        var results: [Result] = []
        for (process, out, err) in started {
            async let stdout = readToEnd(out.fileHandleForReading)
            async let stderr = readToEnd(err.fileHandleForReading)
            let (output, errors) = await (stdout, stderr)
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    process.waitUntilExit()
                    continuation.resume()
                }
            }
            results.append(Result(
                status: process.terminationStatus,
                stdout: String(decoding: output, as: UTF8.self),
                stderr: String(decoding: errors, as: UTF8.self)
            ))
        }
        return results
    }

    private static func readToEnd(_ handle: FileHandle) async -> Data {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: handle.readDataToEndOfFile()) }
        }
    }
}
