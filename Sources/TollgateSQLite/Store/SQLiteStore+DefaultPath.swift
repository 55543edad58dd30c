import Foundation
import TollgateCore

extension SQLiteStore {
    /// Where a tool's or an app's ledger lives when it names no path, with its directory created.
    ///
    /// - On Apple platforms: `Application Support/Tollgate/tollgate.sqlite` in the app's container,
    ///   or in the App Group container named by `applicationGroup`, so that an app and its
    ///   extensions (a widget, a share extension, a background task) share one ledger. The
    ///   directory is excluded from backups. Never `Caches/`: the system may purge it, and the
    ///   ledger with it.
    /// - Elsewhere: `tollgate/tollgate.sqlite` under `$XDG_DATA_HOME`, else `~/.local/share`.
    ///
    /// An app that shares its file with extensions must suspend the store while it is suspended
    /// itself (see the adoption article): the system kills a suspended app that holds a lock on a
    /// file in a shared container.
    /// - Parameters:
    ///   - applicationGroup: An App Group identifier (`group.com.example.app`), Apple platforms only.
    ///   - environment: The environment to read `XDG_DATA_HOME` from.
    /// - Returns: The file's path.
    /// - Throws: ``StoreError/cannotOpen(path:reason:cause:)`` when the container does not exist (no
    ///   App Group entitlement, or not an Apple platform) or the directory cannot be created.
    public static func defaultPath(
        applicationGroup: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> String {
        let directory = try defaultDirectory(applicationGroup: applicationGroup, environment: environment)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError.cannotOpen(path: directory.path, reason: "its directory cannot be created (\(error))", cause: nil)
        }
        #if canImport(Darwin)
        var excluded = directory
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try? excluded.setResourceValues(values)
        #endif
        return directory.appending(path: "tollgate.sqlite").path
    }

    private static func defaultDirectory(applicationGroup: String?, environment: [String: String]) throws -> URL {
        #if canImport(Darwin)
        if let applicationGroup {
            guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: applicationGroup) else {
                throw StoreError.cannotOpen(
                    path: applicationGroup,
                    reason: "there is no App Group container of that name: add the App Groups entitlement with it",
                    cause: nil
                )
            }
            return container.appending(path: "Library/Application Support/Tollgate", directoryHint: .isDirectory)
        }
        let support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask,
                                                  appropriateFor: nil, create: true)
        return support.appending(path: "Tollgate", directoryHint: .isDirectory)
        #else
        if let applicationGroup {
            throw StoreError.cannotOpen(
                path: applicationGroup, reason: "App Group containers exist on Apple platforms only", cause: nil
            )
        }
        let data = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appending(path: ".local/share")
        return data.appending(path: "tollgate", directoryHint: .isDirectory)
        #endif
    }
}
