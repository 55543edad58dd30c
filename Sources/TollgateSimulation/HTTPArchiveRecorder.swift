import Foundation
import HTTPTypes
import Tollgate

/// Writes exchanges to a HAR 1.2 file as they happen (`tollgate proxy --record FILE`), so a day
/// through the proxy can be replayed tomorrow under another description with `tollgate simulate`.
///
/// Secrets are redacted exactly as the store redacts them (``SecretRedaction``): secret query and
/// path parameters read `REDACTED`, credential header fields and cookies are left out, echoes of a
/// secret in an answer's fields are scrubbed. Bodies are written only when asked for.
///
/// Entries are appended as they come and the file is closed by ``close()``: a proxy stopped with
/// Ctrl-C or SIGTERM leaves a complete file. A file it wrote before is continued, not replaced:
/// restarting the proxy with the same `--record` keeps what was recorded, and a recording whose
/// proxy was killed keeps every whole entry (``wholePart(of:)``; `tollgate simulate` replays such a
/// file too). Any other file is left as it is.
public actor HTTPArchiveRecorder {
    private let handle: FileHandle
    private let redaction: SecretRedaction
    private let recordsBodies: Bool
    private var wroteEntry = false
    private var closed = false
    private let encoder: JSONEncoder

    /// Opens the file to record to: creates it (owner-only), or continues a recording of its own
    /// that is there.
    /// - Parameters:
    ///   - path: The file.
    ///   - redaction: The secrets to redact, as the gate's cache does.
    ///   - recordsBodies: Whether bodies are written (they can be large, and hold personal data).
    /// - Throws: ``HTTPArchiveError`` when the path cannot be recorded to (``checkDestination(_:)``),
    ///   or the file cannot be created or written.
    public init(path: String, redaction: SecretRedaction, recordsBodies: Bool) throws(HTTPArchiveError) {
        let existing = try Self.checkDestination(path)
        if existing == nil,
           !FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) {
            throw HTTPArchiveError(file: path, message: "cannot be created: \(String(cString: strerror(errno)))")
        }
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw HTTPArchiveError(file: path, message: "cannot be opened for writing: \(String(cString: strerror(errno)))")
        }
        // Held while this recorder lives: two proxies writing one file from the same offset
        // overwrite each other's entries.
        guard flock(handle.fileDescriptor, LOCK_EX | LOCK_NB) == 0 else {
            try? handle.close()
            throw Self.recordedElsewhere(path)
        }
        do {
            if let existing {
                // Past the last whole entry: the end a clean stop wrote, or a line a kill cut short.
                try handle.truncate(atOffset: UInt64(existing.length))
                try handle.seekToEnd()
            } else {
                try handle.write(contentsOf: Self.head)
            }
        } catch {
            throw HTTPArchiveError(file: path, message: "cannot be written: \(error.localizedDescription)")
        }
        self.handle = handle
        self.redaction = redaction
        self.recordsBodies = recordsBodies
        self.wroteEntry = (existing?.entries ?? 0) > 0
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        self.encoder = encoder
    }

    /// Whether `path` can be recorded to, before the proxy starts: a new file in a directory that
    /// exists, or a recording this recorder wrote (continued) that no other proxy is recording to.
    /// - Parameter path: The file.
    /// - Returns: The whole part of the recording there (``wholePart(of:)``), or nil for a new file.
    /// - Throws: ``HTTPArchiveError`` for a directory, a directory that does not exist, a file that
    ///   cannot be read, or a file that is not such a recording (it is left as it is).
    @discardableResult
    public static func checkDestination(_ path: String) throws(HTTPArchiveError) -> (length: Int, entries: Int, isClosed: Bool)? {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard !isDirectory.boolValue else {
                throw HTTPArchiveError(file: path, message: "is a directory: name a file to record to, such as \(path)/day.har")
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw HTTPArchiveError(file: path, message: "cannot be read, so it cannot be continued")
            }
            guard !data.isEmpty else { return nil }
            guard let part = wholePart(of: data) else {
                throw HTTPArchiveError(file: path, message: "is there and is not a recording of tollgate proxy --record; it is left as it is: name another file")
            }
            if let probe = FileHandle(forReadingAtPath: path) {
                // Closing the probe lets its lock go.
                defer { try? probe.close() }
                guard flock(probe.fileDescriptor, LOCK_EX | LOCK_NB) == 0 else { throw recordedElsewhere(path) }
            }
            return part
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
            throw HTTPArchiveError(file: path, message: "cannot be created: the directory \(directory) does not exist")
        }
        return nil
    }

    private static func recordedElsewhere(_ path: String) -> HTTPArchiveError {
        HTTPArchiveError(file: path, message: "another proxy is recording to it: name another file, or stop that proxy first")
    }

    /// Appends one exchange.
    /// - Parameters:
    ///   - request: The request as sent upstream.
    ///   - requestBody: Its body.
    ///   - startedAt: When it started.
    ///   - duration: How long until the answer, in seconds.
    ///   - response: The answer's head, or nil when the gate answered without the server (a
    ///     refusal): written as status 0, which a replay treats as no answer.
    ///   - body: The answer's body.
    public func record(
        request: HTTPRequest, requestBody: Data?, startedAt: Date, duration: TimeInterval,
        response: HTTPResponse?, body: Data?
    ) {
        guard !closed, let url = redaction.url(of: request) else { return }
        let secrets = redaction.secrets(of: request)
        let requestHeaders = redaction.requestFields(request.headerFields)
            .filter { $0.name != .cookie }
            .map { HTTPArchive.Header(name: $0.name.rawName, value: $0.value) }
        let postData = recordsBodies ? requestBody.map {
            HTTPArchive.PostData(mimeType: request.headerFields[.contentType] ?? "", text: String(decoding: $0, as: UTF8.self))
        } : nil
        let responseHeaders = response.map { redaction.responseFields($0.headerFields, secrets: secrets) } ?? HTTPFields()
        let content: HTTPArchive.Content
        if recordsBodies, let body, !body.isEmpty {
            if let text = String(data: body, encoding: .utf8) {
                content = .init(size: body.count, mimeType: responseHeaders[.contentType] ?? "", text: text)
            } else {
                content = .init(size: body.count, mimeType: responseHeaders[.contentType] ?? "", text: body.base64EncodedString(),
                                encoding: "base64")
            }
        } else {
            content = .init(size: body?.count ?? 0, mimeType: responseHeaders[.contentType] ?? "", text: nil)
        }
        var entry = HTTPArchive.Entry(
            startedDateTime: Self.timestamp(startedAt), time: (duration * 1000).rounded(),
            request: HTTPArchive.Request(method: request.method.rawValue, url: url, headers: requestHeaders, postData: postData),
            response: HTTPArchive.Response(
                status: response.map { $0.status.code } ?? 0,
                headers: responseHeaders.map { HTTPArchive.Header(name: $0.name.rawName, value: $0.value) },
                content: content)
        )
        entry.response.statusText = response?.status.reasonPhrase ?? ""
        guard let encoded = try? encoder.encode(entry) else { return }
        handle.write(Data((wroteEntry ? ",\n" : "\n").utf8) + encoded)
        wroteEntry = true
    }

    /// Writes the archive's end and closes the file; later exchanges are not written.
    public func close() {
        guard !closed else { return }
        closed = true
        handle.write(Self.end)
        try? handle.close()
    }

    private static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
