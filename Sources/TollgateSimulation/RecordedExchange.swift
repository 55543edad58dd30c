import Foundation
import HTTPTypes

/// One entry of a HAR file, checked and ready to replay: an http(s) request with its start time,
/// and the answer it got.
public struct RecordedExchange: Sendable {
    /// The entry's position in the file, from 0.
    public var index: Int
    /// When the request started.
    public var startedAt: Date
    /// The request, with an absolute URL.
    public var request: HTTPRequest
    /// Its body, if any.
    public var requestBody: Data?
    /// The answer's status.
    public var status: Int
    /// The answer's fields (hop-by-hop fields and `Content-Encoding`'s claim removed: HAR keeps
    /// bodies decoded).
    public var responseFields: HTTPFields
    /// The answer's body; empty when the file did not record it.
    public var responseBody: Data
}

extension HTTPArchive {
    /// The largest body one entry may hold: a replay keeps every recorded body in memory.
    public static let maximumBodyBytes = 16 * 1024 * 1024

    /// Reads a HAR file and checks every entry.
    /// - Parameter path: The file.
    /// - Returns: The entries, sorted by start time (the file's order among equal times).
    /// - Throws: ``HTTPArchiveError`` naming the entry at fault: JSON that ends early or is not
    ///   JSON, a missing field, a URL that is not http(s), a date that does not parse, a body past
    ///   ``maximumBodyBytes``.
    public static func exchanges(inFile path: String) throws(HTTPArchiveError) -> [RecordedExchange] {
        try recording(inFile: path).exchanges
    }

    /// Reads a HAR file as ``exchanges(inFile:)`` does, and also a recording of `tollgate proxy
    /// --record` whose proxy did not stop cleanly (killed, crashed, or still running): its whole
    /// entries, which the recorder writes one line each (``HTTPArchiveRecorder/wholePart(of:)``).
    /// - Parameter path: The file.
    /// - Returns: The entries, sorted by start time, and whether the file was such a recording cut short.
    /// - Throws: ``HTTPArchiveError``, as ``exchanges(inFile:)``.
    public static func recording(inFile path: String) throws(HTTPArchiveError) -> (exchanges: [RecordedExchange], cutShort: Bool) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HTTPArchiveError(file: path, message: "the file cannot be read")
        }
        do {
            return (try exchanges(in: data, file: path), false)
        } catch {
            guard let part = HTTPArchiveRecorder.wholePart(of: data), !part.isClosed else { throw error }
            return (try exchanges(in: data.prefix(part.length) + HTTPArchiveRecorder.end, file: path), true)
        }
    }

    /// Reads HAR text and checks every entry.
    /// - Parameters:
    ///   - data: The file's bytes.
    ///   - file: Its name, for errors.
    /// - Returns: The entries, sorted by start time.
    /// - Throws: ``HTTPArchiveError``.
    public static func exchanges(in data: Data, file: String) throws(HTTPArchiveError) -> [RecordedExchange] {
        let archive: HTTPArchive
        do {
            archive = try JSONDecoder().decode(HTTPArchive.self, from: data)
        } catch let error as DecodingError {
            throw Self.describe(error, file: file)
        } catch {
            throw HTTPArchiveError(file: file, message: "not a HAR file: \(error)")
        }
        var exchanges: [RecordedExchange] = []
        exchanges.reserveCapacity(archive.log.entries.count)
        for (index, entry) in archive.log.entries.enumerated() {
            exchanges.append(try exchange(entry, index: index, file: file))
        }
        // A stable sort: the file's order among equal start times.
        return exchanges.enumerated()
            .sorted { ($0.element.startedAt, $0.offset) < ($1.element.startedAt, $1.offset) }
            .map(\.element)
    }

    private static func exchange(_ entry: Entry, index: Int, file: String) throws(HTTPArchiveError) -> RecordedExchange {
        func fail(_ message: String) -> HTTPArchiveError { HTTPArchiveError(file: file, entry: index, message: message) }
        guard let startedAt = Self.date(entry.startedDateTime) else {
            throw fail("startedDateTime '\(entry.startedDateTime.prefix(64))' is not an ISO 8601 date")
        }
        guard let url = URL(string: entry.request.url), let scheme = url.scheme?.lowercased(),
              ["http", "https"].contains(scheme), let host = url.host, !host.isEmpty else {
            throw fail("'\(entry.request.url.prefix(200))' is not an http(s) URL")
        }
        guard let method = HTTPRequest.Method(entry.request.method) else {
            throw fail("'\(entry.request.method.prefix(64))' is not an HTTP method")
        }
        let path = url.path(percentEncoded: true).isEmpty ? "/" : url.path(percentEncoded: true)
        let bracketed = host.contains(":") ? "[\(host)]" : host
        var request = HTTPRequest(method: method, scheme: scheme, authority: url.port.map { "\(bracketed):\($0)" } ?? bracketed,
                                  path: path + (url.query(percentEncoded: true).map { "?\($0)" } ?? ""))
        for header in entry.request.headers {
            // HTTP/2 pseudo-fields (:authority…) and hop-by-hop fields are the recorder's connection's.
            guard !header.name.hasPrefix(":"), let name = HTTPField.Name(header.name),
                  !Self.connectionFields.contains(name.canonicalName) else { continue }
            request.headerFields.append(HTTPField(name: name, value: header.value))
        }
        let requestBody = entry.request.postData.map { Data($0.text.utf8) }
        if let requestBody, requestBody.count > maximumBodyBytes {
            throw fail("its request body is \(requestBody.count) bytes, more than the \(maximumBodyBytes) a replay keeps")
        }
        guard (0...999).contains(entry.response.status) else { throw fail("status \(entry.response.status) is not an HTTP status") }
        if let text = entry.response.content.text, text.utf8.count > maximumBodyBytes * 4 / 3 + 4 {
            throw fail("its response body is \(text.utf8.count) bytes, more than the \(maximumBodyBytes) a replay keeps")
        }
        let body = entry.response.content.data ?? Data()
        guard body.count <= maximumBodyBytes else {
            throw fail("its response body is \(body.count) bytes, more than the \(maximumBodyBytes) a replay keeps")
        }
        var fields = HTTPFields()
        for header in entry.response.headers {
            guard !header.name.hasPrefix(":"), let name = HTTPField.Name(header.name) else { continue }
            let canonical = name.canonicalName
            // The recorded body is decoded and whole: its coding and length claims are the wire's.
            guard !Self.connectionFields.contains(canonical), canonical != "content-encoding",
                  canonical != "content-length" else { continue }
            fields.append(HTTPField(name: name, value: header.value))
        }
        return RecordedExchange(index: index, startedAt: startedAt, request: request, requestBody: requestBody,
                                status: entry.response.status, responseFields: fields, responseBody: body)
    }

    static let connectionFields: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host",
    ]

    /// An ISO 8601 instant with any number of fractional digits (mitmproxy writes six) and a `Z` or
    /// an offset.
    static func date(_ text: String) -> Date? {
        var whole = text
        var fraction = 0.0
        if let dot = text.firstIndex(of: ".") {
            let digits = text[text.index(after: dot)...].prefix { $0.isASCII && $0.isNumber }
            fraction = Double("0." + digits) ?? 0
            whole = String(text[..<dot]) + String(text[text.index(dot, offsetBy: digits.count + 1)...])
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: whole).map { $0.addingTimeInterval(fraction) }
    }

    private static func describe(_ error: DecodingError, file: String) -> HTTPArchiveError {
        func place(_ path: [any CodingKey]) -> (entry: Int?, field: String) {
            var entry: Int?
            var names: [String] = []
            var inEntries = false
            for key in path {
                if let index = key.intValue {
                    if inEntries, entry == nil { entry = index } else { names.append("[\(index)]") }
                    continue
                }
                if key.stringValue == "entries" { inEntries = true; continue }
                if entry != nil { names.append(key.stringValue) }
            }
            return (entry, names.joined(separator: "."))
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return HTTPArchiveError(file: file, message: "not a HAR file: the JSON is cut short or not JSON (\(context.debugDescription))")
        case .dataCorrupted(let context):
            let (entry, field) = place(context.codingPath)
            return HTTPArchiveError(file: file, entry: entry, message: "\(field) is not valid: \(context.debugDescription)")
        case .keyNotFound(let key, let context):
            let (entry, field) = place(context.codingPath + [key])
            return HTTPArchiveError(file: file, entry: entry, message: "\(field.isEmpty ? key.stringValue : field) is missing")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let (entry, field) = place(context.codingPath)
            return HTTPArchiveError(file: file, entry: entry, message: "\(field) has the wrong type: \(context.debugDescription)")
        @unknown default:
            return HTTPArchiveError(file: file, message: "not a HAR file: \(error)")
        }
    }
}
