import Foundation

/// Why `-o FILE` could not be written.
enum OutputFileError: Error, CustomStringConvertible {
    case cannotCreate(path: String, errno: Int32)
    case cannotRename(path: String, errno: Int32)

    var description: String {
        switch self {
        case .cannotCreate(let path, let code):
            "cannot write to '\(path)': \(String(cString: strerror(code))) (the body is written next to it first)"
        case .cannotRename(let path, let code):
            "cannot move the body into '\(path)': \(String(cString: strerror(code)))"
        }
    }
}
