/// Why an API description was refused: where (file, line, column, key) and what is wrong.
public struct APIDescriptionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file, or `<text>` for a description given as a string.
    public var file: String
    /// The line, from 1; nil when the problem is the whole file.
    public var line: Int?
    /// The column, from 1.
    public var column: Int?
    /// The key's path, such as `endpoints.search.cost`; empty for the top level.
    public var key: String
    /// What is wrong, and what would be right.
    public var message: String

    public var description: String {
        let place = [file, line.map(String.init), column.map(String.init)].compactMap { $0 }.joined(separator: ":")
        return key.isEmpty ? "\(place): \(message)" : "\(place): \(key): \(message)"
    }
}
