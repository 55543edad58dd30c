import ArgumentParser
import Foundation
import Logging
import TollgateStore

/// The `--db` option every command shares.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: ArgumentHelp(
        "The database file. Default: $TOLLGATE_DB, else tollgate.sqlite in the user's data directory.",
        valueName: "path"
    ))
    var path: String?

    func validate() throws {
        if let path, path.isEmpty {
            throw ValidationError("--db needs a file path.")
        }
    }

    /// The path in force: `--db`, else `TOLLGATE_DB`, else the user's data directory.
    func resolvedPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path { return path }
        if let path = environment["TOLLGATE_DB"], !path.isEmpty { return path }
        let dataDirectory = environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.homeDirectoryForCurrentUser.appending(path: ".local/share")
        return dataDirectory.appending(path: "tollgate/tollgate.sqlite").path
    }

    /// Opens the store for a command that writes: the file (and its default directory) is created
    /// and migrated when needed.
    func openForWriting(logger: Logger = Logger(label: "tollgate")) throws -> (path: String, store: SQLiteStore) {
        let path = try preparedPath()
        return (path, try SQLiteStore(path: path, logger: logger))
    }

    /// Opens the store for a command that only reads: nothing is created, migrated or written,
    /// so it works on a read-only file or file system and does not wait for another process's
    /// write lock. A missing file is ``StoreError/notFound(path:)``.
    func openForReading(logger: Logger = Logger(label: "tollgate")) throws -> (path: String, store: SQLiteStore) {
        let path = resolvedPath()
        return (path, try SQLiteStore(path: path, configuration: .init(access: .readOnly), logger: logger))
    }

    /// The path in force, with its directory created when it is the default location.
    func preparedPath() throws -> String {
        let path = resolvedPath()
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        if self.path == nil, !FileManager.default.fileExists(atPath: directory.path) {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        return path
    }
}
