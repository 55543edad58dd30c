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
/// Ctrl-C or SIGTERM leaves a complete file.
public actor HTTPArchiveRecorder {
    private let handle: FileHandle
    private let redaction: SecretRedaction
    private let recordsBodies: Bool
    private var wroteEntry = false
    private var closed = false
    private let encoder: JSONEncoder

    /// Creates the file (replacing one that is there) and writes the archive's head.
    /// - Parameters:
    ///   - path: The file.
    ///   - redaction: The secrets to redact, as the gate's cache does.
    ///   - recordsBodies: Whether bodies are written (they can be large, and hold personal data).
    /// - Throws: `CocoaError` when the file cannot be created.
    public init(path: String, redaction: SecretRedaction, recordsBodies: Bool) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = FileHandle(forWritingAtPath: path) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
        }
        self.handle = handle
        self.redaction = redaction
        self.recordsBodies = recordsBodies
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        self.encoder = encoder
        let creator = try encoder.encode(HTTPArchive.Creator(name: "tollgate proxy --record", version: "1"))
        handle.write(Data(#"{"log": {"version": "1.2", "creator": "#.utf8) + creator + Data(#", "entries": ["#.utf8))
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
        handle.write(Data("\n]}}\n".utf8))
        try? handle.close()
    }

    private static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
