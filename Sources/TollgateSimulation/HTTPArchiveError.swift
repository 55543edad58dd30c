import Foundation

/// Why a HAR file cannot be replayed, naming the entry that holds the problem.
public struct HTTPArchiveError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// The entry, from 0, when one entry is at fault.
    public var entry: Int?
    /// What is wrong.
    public var message: String

    /// Creates an error.
    /// - Parameters:
    ///   - file: The file.
    ///   - entry: The entry at fault, if one is.
    ///   - message: What is wrong.
    public init(file: String, entry: Int? = nil, message: String) {
        self.file = file
        self.entry = entry
        self.message = message
    }

    public var description: String {
        "\(file): " + (entry.map { "entry \($0): " } ?? "") + message
    }
}
