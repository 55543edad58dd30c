import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
@testable import Tollgate

/// The byte-level key computation against the string-level one it replaced, kept here as the
/// reference: stored entries are found by their keys, so the same request must keep its key
/// (its URL, credential partition, resource key and scrubbed secrets) byte for byte.
@Suite("Cache keys: the byte-level computation gives the string-level reference's keys")
struct CacheKeyReferenceTests {
    /// Pieces that exercise every branch: separators, escapes, secret names in any case, path
    /// parameters, combining marks after separators, non-ASCII names, user information, ports.
    static let pieces = [
        "a", "B", "id", "part", "key", "KEY", "Key", "api_key", "api%5Fkey", "access_token", "x-token", "my_secret",
        "=", "==", "&", "&&", "?", "#", ";", "/", "%", "%41", "%zz", "%C3%A9", "é", "e\u{301}", "\u{301}", "\u{600}",
        "🚦", "SECRET-abcdefghijkl", "value", "1", "", " ", "+", "İ", "ß",
    ]

    static func text(_ random: inout SeededGenerator, maximumPieces: Int) -> String {
        (0..<Int.random(in: 0...maximumPieces, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    @Test("random requests: the same URL, partition, resource key and secrets as the reference")
    func randomRequests() throws {
        var random = SeededGenerator(seed: 0xB17E5)
        let rules = CacheKey.SecretRules(
            queryParameters: ["key", "api_key", "access_token"], queryParameterPatterns: ["*_secret"],
            headers: [.authorization], headerPatterns: ["*-token"]
        )
        let authorities = ["api.example.com", "API.Example.COM:443", "h:8080", "user:pass@H", "[::1]:443", "[::1]",
                           "ÜNICODE.例え:443", "a:b:c", "host:", "host:+80", "host:-1", "@"]
        for _ in 0..<3_000 {
            var fields = HTTPFields()
            if Bool.random(using: &random) { fields[.authorization] = "Bearer token-\(Int.random(in: 0...3, using: &random))" }
            if Bool.random(using: &random) { fields[HTTPField.Name("X-Api-Token")!] = "t\(Int.random(in: 0...3, using: &random))" }
            let path = Self.text(&random, maximumPieces: 14)
            let request = HTTPRequest(
                method: Bool.random(using: &random) ? .get : .head, scheme: Bool.random(using: &random) ? "HTTPS" : "http",
                authority: authorities.randomElement(using: &random)!,
                path: Bool.random(using: &random) ? "/" + path : path, headerFields: fields
            )
            let key = try CacheKey(request: request, secretRules: rules)
            let reference = try ReferenceCacheKey(request: request, secretRules: rules)
            #expect(key.url == reference.url, "\(request.path ?? "")")
            #expect(key.credentialPartition == reference.credentialPartition, "\(request.path ?? "")")
            #expect(key.resourceKey == reference.resourceKey, "\(request.path ?? "")")
            #expect(key.secrets == reference.secrets, "\(request.path ?? "")")
            if key.resourceKey != reference.resourceKey { break }
        }
    }

    @Test("a known request keeps its known key: the digests of the documented inputs")
    func knownKey() throws {
        let request = HTTPRequest(method: .get, scheme: "https", authority: "www.googleapis.com",
                                  path: "/youtube/v3/videos?part=snippet&id=x&key=AIzaSyBenchmarkKey")
        let key = try CacheKey(request: request, secretRules: .init(CacheConfiguration()))
        #expect(key.url == "https://www.googleapis.com/youtube/v3/videos?id=x&key=REDACTED&part=snippet")
        // SHA-256 as Python's hashlib computes it, over the documented inputs.
        #expect(key.credentialPartition == "7a57bfc673e3bb339d7051430364b846d128528b5becddd150d4049e560955e4")
        // The URL, a line feed and the digest keys had before schema version 8, which rewrote
        // every stored key as `url || char(10) || resource_key`: a stored entry is found as before.
        #expect(key.resourceKey == "https://www.googleapis.com/youtube/v3/videos?id=x&key=REDACTED&part=snippet\n"
                + "bd901846d3e17a900703573b9a80742acf99fa442510ff2141ece81cc301794d")
        #expect(key.secrets == ["AIzaSyBenchmarkKey"])
    }
}

/// The key computation as it was on strings (split on Unicode scalars, parameters as `String`s),
/// before the byte-level one. Test-only: an oracle, not a second implementation to maintain.
private struct ReferenceCacheKey {
    let url: String
    let credentialPartition: String?
    let resourceKey: String
    let secrets: [String]

    init(request: HTTPRequest, secretRules: CacheKey.SecretRules) throws {
        let scheme = try #require(request.scheme), authority = try #require(request.authority)
        let rawPath = try #require(request.path)
        var credentials: [String] = []
        var secrets: [String] = []
        let normalisedScheme = scheme.lowercased()
        var hostAndPort = Substring(authority)
        if let at = hostAndPort.unicodeScalars.lastIndex(of: "@") {
            let userInfo = String(Substring(hostAndPort.unicodeScalars[..<at]))
            credentials.append("userinfo=\(userInfo)")
            secrets.append(userInfo)
            hostAndPort = Substring(hostAndPort.unicodeScalars[hostAndPort.unicodeScalars.index(after: at)...])
        }
        let host: Substring
        var port: Substring?
        if hostAndPort.hasPrefix("["), let close = hostAndPort.firstIndex(of: "]") {
            host = hostAndPort[...close]
            let rest = hostAndPort[hostAndPort.index(after: close)...]
            port = rest.hasPrefix(":") ? rest.dropFirst() : nil
        } else if let colon = hostAndPort.lastIndex(of: ":") {
            host = hostAndPort[..<colon]
            port = hostAndPort[hostAndPort.index(after: colon)...]
        } else {
            host = hostAndPort
        }
        var normalisedAuthority = host.lowercased()
        if let port, !port.isEmpty {
            let defaultPort = ["http": 80, "https": 443, "ws": 80, "wss": 443][normalisedScheme]
            if let number = Int(port), number >= 0 {
                if number != defaultPort { normalisedAuthority += ":\(number)" }
            } else {
                normalisedAuthority += ":\(port)"
            }
        }
        let split = CacheKey.split
        let target = split(Substring(rawPath), "#", 1).first ?? ""
        let parts = split(target, "?", 1)
        var path = parts.first.map(String.init) ?? ""
        if path.isEmpty { path = "/" }
        if path.unicodeScalars.contains(";") {
            path = split(Substring(path), "/", .max).map { segment -> String in
                let pieces = split(segment, ";", .max)
                guard pieces.count > 1 else { return String(segment) }
                return ([String(pieces[0])] + pieces.dropFirst().map { parameter -> String in
                    let pair = split(parameter, "=", 1)
                    guard pair.count == 2, secretRules.isSecretParameter(CacheKey.decodedName(pair[0])) else {
                        return String(parameter)
                    }
                    credentials.append("path:\(pair[0])=\(pair[1])")
                    CacheKey.collectSecret(String(pair[1]), into: &secrets)
                    return "\(pair[0])=\(CacheKey.redactionMarker)"
                }).joined(separator: ";")
            }.joined(separator: "/")
        }
        var query = ""
        if parts.count == 2 {
            let parameters = split(parts[1], "&", .max).filter { !$0.isEmpty }.map { segment in
                let pair = split(segment, "=", 1)
                return (name: String(pair[0]), value: pair.count == 2 ? String(pair[1]) : nil)
            }.enumerated().sorted { first, second in
                // By name; one name's values in the order they came.
                if !first.element.name.utf8.elementsEqual(second.element.name.utf8) {
                    return first.element.name.utf8.lexicographicallyPrecedes(second.element.name.utf8)
                }
                return first.offset < second.offset
            }.map(\.element)
            query = parameters.map { parameter in
                guard let value = parameter.value,
                      secretRules.isSecretParameter(CacheKey.decodedName(parameter.name[...])) else {
                    return parameter.value.map { "\(parameter.name)=\($0)" } ?? parameter.name
                }
                credentials.append("query:\(parameter.name)=\(value)")
                CacheKey.collectSecret(value, into: &secrets)
                return "\(parameter.name)=\(CacheKey.redactionMarker)"
            }.joined(separator: "&")
            if !parameters.isEmpty { query = "?" + query }
        }
        var identityFields: [(name: String, values: [String])] = []
        for field in request.headerFields where secretRules.isSecretHeader(field.name) {
            let name = field.name.canonicalName
            if let index = identityFields.firstIndex(where: { $0.name == name }) {
                identityFields[index].values.append(field.value)
            } else {
                identityFields.append((name, [field.value]))
            }
        }
        for (name, values) in identityFields.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
            credentials.append("header:\(name)=\(values.joined(separator: "\u{0}"))")
            secrets.append(contentsOf: values)
            secrets.append(contentsOf: values.compactMap { value in
                value.split(separator: " ", maxSplits: 1).dropFirst().first.map(String.init)
            })
        }
        let digest = CacheKey.digest(_:)
        let method = request.method.rawValue
        url = "\(normalisedScheme)://\(normalisedAuthority)\(path)\(query)"
        credentialPartition = credentials.isEmpty
            ? nil : digest("tollgate.cache.credentials.v1\n" + credentials.joined(separator: "\n"))
        // Since schema version 8 the URL and a line feed come first; the digest is as it always was.
        resourceKey = url + "\n" + digest("tollgate.cache.resource.v1\n\(method)\n\(url)\n\(credentialPartition ?? "")")
        self.secrets = secrets.filter { $0.utf8.count >= 8 }
    }
}
