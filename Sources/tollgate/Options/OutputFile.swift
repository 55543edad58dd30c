import Foundation

/// `-o FILE`, written so that FILE never holds a partial body: the bytes go to a temporary file in
/// the same directory (same file system, so the final rename is atomic), renamed over FILE only
/// once the whole body is written. On failure the temporary file is removed and FILE is left as it was.
///
/// A FILE that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO) is written
/// in place: renaming over it would replace a device with a file.
final class OutputFile {
    /// The path the body is for.
    let path: String
    /// The temporary file, or nil when the body goes straight to ``path``.
    private let temporaryPath: String?
    /// ``path`` with its symbolic links resolved: where the body ends up.
    private let finalPath: String
    private let handle: FileHandle
    private var finished = false

    /// Creates the temporary file next to `path`.
    /// - Throws: ``OutputFileError`` when the directory cannot be written.
    init(path: String) throws {
        self.path = path
        // Through a symbolic link, as curl writes: the file it names is the one replaced.
        let target = realpath(path, nil).map { resolved in
            defer { free(resolved) }
            return String(cString: resolved)
        } ?? path
        var status = stat()
        let exists = stat(target, &status) == 0
        if exists, (status.st_mode & S_IFMT) != S_IFREG {
            let descriptor = open(target, O_WRONLY | O_TRUNC)
            guard descriptor >= 0 else { throw OutputFileError.cannotCreate(path: path, errno: errno) }
            temporaryPath = nil
            finalPath = target
            handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            return
        }
        let url = URL(fileURLWithPath: target)
        let directory = url.deletingLastPathComponent().path
        var template = Array("\(directory)/.\(url.lastPathComponent).tollgate-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw OutputFileError.cannotCreate(path: path, errno: errno) }
        // mkstemp makes it 0600; the body keeps the mode of the file it replaces, or gets the
        // usual one for a new file, as with curl.
        let mask = umask(0)
        umask(mask)
        fchmod(descriptor, exists ? status.st_mode & 0o7777 : 0o666 & ~mask)
        temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        finalPath = target
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
        guard let temporaryPath else { return }
        guard rename(temporaryPath, finalPath) == 0 else {
            let code = errno
            unlink(temporaryPath)
            throw OutputFileError.cannotRename(path: path, errno: code)
        }
    }

    /// Removes the temporary file; ``path`` is untouched.
    func discard() {
        finished = true
        try? handle.close()
        if let temporaryPath { unlink(temporaryPath) }
    }
}
