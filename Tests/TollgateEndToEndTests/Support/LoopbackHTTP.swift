import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Plain HTTP over loopback with URLSession for the fake servers' own tests: no cache, no cookies,
/// so every answer (a 304 included) reaches the test as the server sent it.
enum LoopbackHTTP {
    /// One answer: status, header fields by lowercased name, body bytes.
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data

        /// A header field by name, any case.
        func header(_ name: String) -> String? { headers[name.lowercased()] }

        /// A header field read as an integer.
        func integer(_ name: String) -> Int? { header(name).flatMap { Int($0) } }

        /// The body as a JSON object, or nil.
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
    }

    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        configuration.httpCookieStorage = nil
        configuration.timeoutIntervalForRequest = 15
        return URLSession(configuration: configuration)
    }()

    /// Sends one request and returns the answer, whatever its status.
    /// - Parameters:
    ///   - url: The URL.
    ///   - method: The method.
    ///   - headers: Header fields to send.
    ///   - body: The body, if any.
    /// - Returns: The answer.
    /// - Throws: When the exchange fails.
    static func send(
        _ url: URL, method: String = "GET", headers: [String: String] = [:], body: Data? = nil
    ) async throws -> Answer {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers {
            request.setValue(value, forHTTPHeaderField: name)
        }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return Answer(status: http.statusCode, headers: fields, body: data)
    }

    /// Sends a JSON body with `POST`.
    /// - Parameters:
    ///   - url: The URL.
    ///   - object: The JSON object to send.
    /// - Returns: The answer.
    /// - Throws: When the object cannot be encoded or the exchange fails.
    static func post(_ url: URL, json object: [String: Any]) async throws -> Answer {
        let body = try JSONSerialization.data(withJSONObject: object)
        return try await send(url, method: "POST", headers: ["Content-Type": "application/json"], body: body)
    }
}
