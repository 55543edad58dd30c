import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A PostgreSQL cluster of one test's own, on a port of its own, driven by
/// `Scripts/postgres-cluster.sh`: for a test that crashes the server, which must not take the
/// shared cluster (and every other test on it) down with it.
struct ThrowawayCluster {
    let port: Int
    /// A database of this run's own on the cluster, so nothing a killed earlier run left is seen.
    let url: String

    /// The repository's cluster script, found from this file's place in the checkout.
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Scripts/postgres-cluster.sh")

    /// Whether a cluster can be started here: PostgreSQL's server is installed, or the script may
    /// install it (it does as root, as in CI).
    static var isAvailable: Bool {
        let installed = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?
            .contains { FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\($0)/bin/pg_ctl") } ?? false
        return installed || getuid() == 0
    }

    /// Starts a cluster on a port derived from this process's id, above Linux's ephemeral ports
    /// (32768–60999) so no client socket holds it, and returns a fresh database on it.
    static func start() throws -> ThrowawayCluster {
        let port = 61_000 + Int(getpid() % 4_000)
        let server = try run("start", port: port).trimmingCharacters(in: .whitespacesAndNewlines)
        guard var components = URLComponents(string: server) else { throw ScriptFailed(command: "start", status: 0, stderr: server) }
        let name = "crash_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        psql.arguments = ["psql", server, "-X", "-qc", "CREATE DATABASE \(name)"]
        psql.standardInput = FileHandle.nullDevice
        try psql.run()
        psql.waitUntilExit()
        guard psql.terminationStatus == 0 else { throw ScriptFailed(command: "CREATE DATABASE", status: psql.terminationStatus, stderr: "") }
        components.path = "/\(name)"
        return ThrowawayCluster(port: port, url: components.string ?? server)
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
