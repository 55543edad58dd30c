import Foundation

/// A HAR 1.2 file (W3C Web Performance WG's HTTP Archive): what Safari's Web Inspector, Chrome's
/// DevTools, Firefox, Proxyman, Charles and mitmproxy export, and what `tollgate proxy --record`
/// writes. Only what a replay needs is read; everything else in the file is ignored.
public struct HTTPArchive: Sendable, Codable {
    /// The archive's one log.
    public var log: Log

    /// Creates an archive.
    /// - Parameter log: Its log.
    public init(log: Log) {
        self.log = log
    }

    /// The `log` object.
    public struct Log: Sendable, Codable {
        /// `1.2`.
        public var version: String
        /// What wrote the file.
        public var creator: Creator
        /// The requests, in the order written (not always by time).
        public var entries: [Entry]

        /// Creates a log.
        /// - Parameters:
        ///   - creator: What wrote it.
        ///   - entries: Its entries.
        public init(creator: Creator, entries: [Entry]) {
            self.version = "1.2"
            self.creator = creator
            self.entries = entries
        }
    }

    /// The program that wrote the file.
    public struct Creator: Sendable, Codable {
        /// Its name.
        public var name: String
        /// Its version.
        public var version: String

        /// Creates a creator.
        /// - Parameters:
        ///   - name: Its name.
        ///   - version: Its version.
        public init(name: String, version: String) {
            self.name = name
            self.version = version
        }
    }

    /// One request and its answer.
    public struct Entry: Sendable, Codable {
        /// When the request started, as the file writes it (ISO 8601).
        public var startedDateTime: String
        /// Milliseconds the exchange took.
        public var time: Double
        /// The request.
        public var request: Request
        /// The answer.
        public var response: Response
        /// HAR's required (and here empty) cache object.
        public var cache: [String: String]
        /// HAR's required timings; only `wait` means anything here.
        public var timings: Timings

        /// Creates an entry.
        public init(startedDateTime: String, time: Double, request: Request, response: Response) {
            self.startedDateTime = startedDateTime
            self.time = time
            self.request = request
            self.response = response
            self.cache = [:]
            self.timings = Timings(send: 0, wait: time, receive: 0)
        }

        enum CodingKeys: String, CodingKey {
            case startedDateTime, time, request, response, cache, timings
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            startedDateTime = try container.decode(String.self, forKey: .startedDateTime)
            time = try container.decodeIfPresent(Double.self, forKey: .time) ?? 0
            request = try container.decode(Request.self, forKey: .request)
            response = try container.decode(Response.self, forKey: .response)
            cache = [:]
            timings = (try? container.decodeIfPresent(Timings.self, forKey: .timings)) ?? Timings(send: 0, wait: time, receive: 0)
        }
    }

    /// A header field.
    public struct Header: Sendable, Codable, Hashable {
        /// Its name.
        public var name: String
        /// Its value.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A request as recorded.
    public struct Request: Sendable, Codable {
        /// `GET`, `POST`…
        public var method: String
        /// The absolute URL, query included.
        public var url: String
        /// `HTTP/1.1`, `HTTP/2`…
        public var httpVersion: String
        /// Header fields.
        public var headers: [Header]
        /// The query, as HAR repeats it (ignored on reading: the URL holds it).
        public var queryString: [Header]
        /// The body, when there was one.
        public var postData: PostData?
        /// HAR's sizes; -1 when unknown.
        public var headersSize: Int
        /// The body's size; -1 when unknown.
        public var bodySize: Int
        /// HAR's cookies (never written: they are credentials).
        public var cookies: [Header]

        /// Creates a request.
        public init(method: String, url: String, headers: [Header], postData: PostData? = nil) {
            self.method = method
            self.url = url
            self.httpVersion = "HTTP/1.1"
            self.headers = headers
            self.queryString = []
            self.postData = postData
            self.headersSize = -1
            self.bodySize = postData.map { $0.text.utf8.count } ?? 0
            self.cookies = []
        }

        enum CodingKeys: String, CodingKey {
            case method, url, httpVersion, headers, queryString, postData, headersSize, bodySize, cookies
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            method = try container.decode(String.self, forKey: .method)
            url = try container.decode(String.self, forKey: .url)
            httpVersion = try container.decodeIfPresent(String.self, forKey: .httpVersion) ?? "HTTP/1.1"
            headers = try container.decodeIfPresent([Header].self, forKey: .headers) ?? []
            queryString = []
            postData = try container.decodeIfPresent(PostData.self, forKey: .postData)
            headersSize = -1
            bodySize = (try? container.decodeIfPresent(Int.self, forKey: .bodySize)) ?? -1
            cookies = []
        }
    }

    /// A request body.
    public struct PostData: Sendable, Codable {
        /// Its media type.
        public var mimeType: String
        /// Its text.
        public var text: String

        /// Creates a body.
        public init(mimeType: String, text: String) {
            self.mimeType = mimeType
            self.text = text
        }

        enum CodingKeys: String, CodingKey { case mimeType, text }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            mimeType = try container.decodeIfPresent(String.self, forKey: .mimeType) ?? ""
            text = try container.decodeIfPresent(String.self, forKey: .text) ?? ""
        }
    }

    /// An answer as recorded.
    public struct Response: Sendable, Codable {
        /// The status code (0 when the request failed).
        public var status: Int
        /// The reason phrase.
        public var statusText: String
        /// `HTTP/1.1`…
        public var httpVersion: String
        /// Header fields.
        public var headers: [Header]
        /// The body.
        public var content: Content
        /// `Location`'s target, or empty.
        public var redirectURL: String
        /// HAR's sizes; -1 when unknown.
        public var headersSize: Int
        /// The body's size on the wire; -1 when unknown.
        public var bodySize: Int
        /// HAR's cookies (never written).
        public var cookies: [Header]

        /// Creates an answer.
        public init(status: Int, headers: [Header], content: Content) {
            self.status = status
            self.statusText = ""
            self.httpVersion = "HTTP/1.1"
            self.headers = headers
            self.content = content
            self.redirectURL = ""
            self.headersSize = -1
            self.bodySize = content.size
            self.cookies = []
        }

        enum CodingKeys: String, CodingKey {
            case status, statusText, httpVersion, headers, content, redirectURL, headersSize, bodySize, cookies
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            status = try container.decode(Int.self, forKey: .status)
            statusText = try container.decodeIfPresent(String.self, forKey: .statusText) ?? ""
            httpVersion = try container.decodeIfPresent(String.self, forKey: .httpVersion) ?? "HTTP/1.1"
            headers = try container.decodeIfPresent([Header].self, forKey: .headers) ?? []
            content = try container.decodeIfPresent(Content.self, forKey: .content) ?? Content(size: 0, mimeType: "", text: nil)
            redirectURL = try container.decodeIfPresent(String.self, forKey: .redirectURL) ?? ""
            headersSize = -1
            bodySize = (try? container.decodeIfPresent(Int.self, forKey: .bodySize)) ?? -1
            cookies = []
        }
    }

    /// An answer's body.
    public struct Content: Sendable, Codable {
        /// Its decoded size in bytes.
        public var size: Int
        /// Its media type.
        public var mimeType: String
        /// The body as text, or base64 when ``encoding`` says so; absent when not recorded.
        public var text: String?
        /// `base64` when ``text`` is base64.
        public var encoding: String?

        /// Creates a body.
        public init(size: Int, mimeType: String, text: String?, encoding: String? = nil) {
            self.size = size
            self.mimeType = mimeType
            self.text = text
            self.encoding = encoding
        }

        enum CodingKeys: String, CodingKey { case size, mimeType, text, encoding }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            size = (try? container.decodeIfPresent(Int.self, forKey: .size)) ?? 0
            mimeType = try container.decodeIfPresent(String.self, forKey: .mimeType) ?? ""
            text = try container.decodeIfPresent(String.self, forKey: .text)
            encoding = try container.decodeIfPresent(String.self, forKey: .encoding)
        }

        /// The body's bytes: the text decoded from base64 when so encoded; nil when not recorded
        /// or not valid base64.
        public var data: Data? {
            guard let text else { return nil }
            return encoding == "base64" ? Data(base64Encoded: text, options: .ignoreUnknownCharacters) : Data(text.utf8)
        }
    }

    /// HAR's timings.
    public struct Timings: Sendable, Codable {
        /// Milliseconds sending.
        public var send: Double
        /// Milliseconds waiting for the answer.
        public var wait: Double
        /// Milliseconds receiving it.
        public var receive: Double
    }
}
