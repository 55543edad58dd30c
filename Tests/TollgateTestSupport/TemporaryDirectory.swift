import Foundation

/// A fresh directory under the system's temporary directory, removed when released.
public final class TemporaryDirectory {
    public let url: URL

    public init() throws {
        url = FileManager.default.temporaryDirectory
            .appending(path: "tollgate-tests-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    public func path(_ name: String) -> String {
        url.appending(path: name).path
    }
}

public func fileBytes(_ path: String) -> Data? {
    FileManager.default.contents(atPath: path)
}

public func posixPermissions(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}
