import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a shell script in a mount namespace of its own (`unshare -m`), so the mounts it makes — a
/// read-only bind mount, a small tmpfs that fills up — vanish with it and nothing else on the
/// machine sees them. Needs root and util-linux's `unshare`; tests that use it are skipped, with
/// that reason, where it is not available.
public enum MountNamespace {
    /// Whether this process can make mounts in a namespace of its own.
    public static let isAvailable: Bool = {
        guard getuid() == 0, let result = try? run("mount -t tmpfs -o size=64k tmpfs /mnt") else { return false }
        return result.status == 0
    }()

    /// Runs `script` with `sh -c` in a new mount namespace and waits for it.
    /// - Parameter script: The commands.
    /// - Returns: Its exit status and what it printed.
    /// - Throws: When `unshare` cannot be started.
    public static func run(_ script: String) throws -> WorkerProcess.Result {
        try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), ["unshare", "-m", "sh", "-c", script])
    }
}
