import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of one test's own, on a port of its own, driven by
/// `Scripts/postgres-cluster.sh`: for a test that crashes the server, which must not take the
/// shared cluster (and every other test on it) down with it.
struct ThrowawayCluster {
    let port: Int
    let url: String

    /// The repository's cluster script, found from this file's place in the checkout.
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Scripts/postgres-cluster.sh")

    /// Starts a cluster on a port derived from this process's id (two test runs on one machine
    /// do not meet) and returns it once it accepts connections.
    static func start() throws -> ThrowawayCluster {
        let port = 55_000 + Int(getpid() % 2_000)
        let url = try run("start", port: port).trimmingCharacters(in: .whitespacesAndNewlines)
        return ThrowawayCluster(port: port, url: url)
    }

    /// Crashes the server (`pg_ctl restart -m immediate`) and returns once it is back.
    func crash() throws {
        _ = try Self.run("restart", port: port)
    }

    /// Stops the server and removes its directory.
    func stop() {
        _ = try? Self.run("stop", port: port)
    }

    /// Runs the script with its output in files, never pipes: a server it starts can then hold
    /// nothing of ours open, and `timeout` bounds every call.
    private static func run(_ command: String, port: Int) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tollgate-cluster-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stdout = directory.appending(path: "stdout")
        let stderr = directory.appending(path: "stderr")
        _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["120", "bash", script.path, command]
        process.environment = ProcessInfo.processInfo.environment.merging(["TOLLGATE_PG_PORT": "\(port)"]) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: stdout)
        process.standardError = try FileHandle(forWritingTo: stderr)
        try process.run()
        process.waitUntilExit()
        let output = (try? String(contentsOf: stdout, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0 else {
            throw ScriptFailed(command: command, status: process.terminationStatus,
                               stderr: (try? String(contentsOf: stderr, encoding: .utf8)) ?? "")
        }
        return output
    }

    struct ScriptFailed: Error, CustomStringConvertible {
        let command: String
        let status: Int32
        let stderr: String
        var description: String { "postgres-cluster.sh \(command) exited \(status): \(stderr)" }
    }
}
