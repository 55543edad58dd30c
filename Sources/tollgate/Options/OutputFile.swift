import Foundation

/// `-o FILE`, written so that FILE never holds a partial body: the bytes go to a temporary file in
/// the same directory (same file system, so the final rename is atomic), renamed over FILE only
/// once the whole body is written. On failure the temporary file is removed and FILE is left as it was.
final class OutputFile {
    /// The path the body is for.
    let path: String
    private let temporaryPath: String
    private let handle: FileHandle
    private var finished = false

    /// Creates the temporary file next to `path`.
    /// - Throws: ``OutputFileError`` when the directory cannot be written.
    init(path: String) throws {
        self.path = path
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        var template = Array("\(directory)/.\(url.lastPathComponent).tollgate-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw OutputFileError.cannotCreate(path: path, errno: errno) }
        // mkstemp makes it 0600; a body written with -o gets the usual mode, as curl's does.
        let mask = umask(0)
        umask(mask)
        fchmod(descriptor, 0o666 & ~mask)
        temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    deinit {
        if !finished { discard() }
    }

    /// Appends `data`.
    func write(_ data: Data) throws {
        try handle.write(contentsOf: data)
    }

    /// Renames the complete body over ``path``.
    /// - Throws: ``OutputFileError`` when it cannot be renamed.
    func commit() throws {
        finished = true
        try? handle.close()
        guard rename(temporaryPath, path) == 0 else {
            let code = errno
            unlink(temporaryPath)
            throw OutputFileError.cannotRename(path: path, errno: code)
        }
    }

    /// Removes the temporary file; ``path`` is untouched.
    func discard() {
        finished = true
        try? handle.close()
        unlink(temporaryPath)
    }
}
