import Foundation
import HTTPTypes
import Testing
@testable import TollgateProxy

@Suite("UpstreamLinkRewriter: links to the upstream point at the proxy, others stay byte for byte")
struct UpstreamLinkRewriterTests {
    static let github = UpstreamLinkRewriter(upstream: URL(string: "https://api.github.com")!, clientAuthority: "127.0.0.1:8080")!
    /// GitHub Enterprise's API under /api/v3, mounted at the proxy's root.
    static let enterprise = UpstreamLinkRewriter(upstream: URL(string: "https://ghe.example.com/api/v3/")!,
                                                 clientAuthority: "localhost:9000")!

    static func header(_ rewriter: UpstreamLinkRewriter, _ reference: String) -> String? {
        rewriter.proxied(Array(reference.utf8)[...], .header).map { String(decoding: $0, as: UTF8.self) }
    }

    static func link(_ rewriter: UpstreamLinkRewriter, _ value: String) -> String? {
        rewriter.rewrittenLinkValue(Array(value.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("a URL on the upstream's origin keeps its path, query, fragment and template under the proxy's origin",
          arguments: [
              ("https://api.github.com/repos/o/r/issues?page=2&per_page=30", "http://127.0.0.1:8080/repos/o/r/issues?page=2&per_page=30"),
              ("https://api.github.com/repos/o/r#readme", "http://127.0.0.1:8080/repos/o/r#readme"),
              ("HTTPS://API.GitHub.com:443/repos/o/r", "http://127.0.0.1:8080/repos/o/r"),
              ("https://api.github.com/repos/o/r/issues{/number}", "http://127.0.0.1:8080/repos/o/r/issues{/number}"),
              ("https://api.github.com", "http://127.0.0.1:8080"),
              ("https://api.github.com?x=1", "http://127.0.0.1:8080?x=1"),
              ("//api.github.com/users/o", "//127.0.0.1:8080/users/o"),
          ])
    func sameOrigin(url: String, expected: String) {
        #expect(Self.header(Self.github, url) == expected)
    }

    @Test("other origins, other schemes and ports, userinfo, dot segments and relative references are left alone",
          arguments: [
              "http://api.github.com/repos/o/r", "https://api.github.com:8443/repos/o/r", "https://github.com/o/r",
              "https://api.github.com.evil.example/repos", "https://user@api.github.com/repos", "https://uploads.github.com/x",
              "https://api.github.com/repos/../admin", "https://api.github.com/%2e%2E/admin", "/repos/o/r", "?page=2",
              "issues?page=2", "mailto:o@api.github.com", "https://api.github.com:99999999999999999999/x", "",
          ])
    func elsewhere(url: String) {
        #expect(Self.header(Self.github, url) == nil)
    }

    @Test("under a base path: the base path comes off, absolute paths under it too, and what lies outside it stays",
          arguments: [
              ("https://ghe.example.com/api/v3/repos/o/r?page=2", "http://localhost:9000/repos/o/r?page=2"),
              ("https://ghe.example.com/api/v3", "http://localhost:9000"),
              ("https://ghe.example.com/api/v3?page=2", "http://localhost:9000?page=2"),
              ("/api/v3/repos/o/r/issues?page=2", "/repos/o/r/issues?page=2"),
              ("/api/v3", "/"),
              ("/api/v3?page=2", "/?page=2"),
          ])
    func basePath(url: String, expected: String) {
        #expect(Self.header(Self.enterprise, url) == expected)
    }

    @Test("outside the base path, or only sharing its prefix, a URL cannot go through the proxy and stays",
          arguments: ["https://ghe.example.com/login", "https://ghe.example.com/api/v30/x", "/api/v30/x", "/login",
                      "https://ghe.example.com/api", "https://ghe.example.com/api/v3/../login", "/api/v3/../login"])
    func outsideBasePath(url: String) {
        #expect(Self.header(Self.enterprise, url) == nil)
    }

    @Test("Link: every target and anchor on the upstream is rewritten; parameters, quoted strings and other origins keep their bytes")
    func linkField() {
        let value = #"<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=5>; rel="last""#
        #expect(Self.link(Self.github, value)
            == #"<http://127.0.0.1:8080/repositories/1/issues?page=2>; rel="next", <http://127.0.0.1:8080/repositories/1/issues?page=5>; rel="last""#)

        let mixed = #"<https://docs.github.com/rest>;rel="help";title="see <https://api.github.com/x>, then",  <https://api.github.com/a> ; rel=prev ; anchor="https://api.github.com/b#c""#
        #expect(Self.link(Self.github, mixed)
            == #"<https://docs.github.com/rest>;rel="help";title="see <https://api.github.com/x>, then",  <http://127.0.0.1:8080/a> ; rel=prev ; anchor="http://127.0.0.1:8080/b#c""#)
        #expect(Self.link(Self.github, "<https://api.github.com/a>; anchor=https://api.github.com/b; rel=x")
            == "<http://127.0.0.1:8080/a>; anchor=http://127.0.0.1:8080/b; rel=x")
        // A relation type that is a URL names a kind of link, not a place: it stays.
        #expect(Self.link(Self.github, #"<https://api.github.com/a>; rel="https://api.github.com/rels/x""#)
            == #"<http://127.0.0.1:8080/a>; rel="https://api.github.com/rels/x""#)

        for untouched in [#"<https://github.com/o/r>; rel="alternate""#, "<https://api.github.com/never-closed", "", "garbage, ;;=\"",
                          #"<https://other.example/a>; anchor="https://other.example/"; rel=x"#] {
            #expect(Self.link(Self.github, untouched) == nil, "\(untouched)")
        }
    }

    @Test("Location and Content-Location are rewritten; other fields, and fields naming other origins, keep their bytes")
    func fields() {
        var fields = HTTPFields()
        fields[.location] = "https://api.github.com/repos/o/r2"
        fields[.contentLocation] = "https://github.com/o/r"
        fields[UpstreamLinkRewriter.link] = #"<https://api.github.com/x?page=2>; rel="next""#
        fields[.eTag] = #""abc""#
        fields[HTTPField.Name("X-Other-Url")!] = "https://api.github.com/x"
        var rewritten = fields
        Self.github.rewriteFields(&rewritten)
        #expect(rewritten[.location] == "http://127.0.0.1:8080/repos/o/r2")
        #expect(rewritten[.contentLocation] == "https://github.com/o/r")
        #expect(rewritten[UpstreamLinkRewriter.link] == #"<http://127.0.0.1:8080/x?page=2>; rel="next""#)
        #expect(rewritten[.eTag] == #""abc""#)
        #expect(rewritten[HTTPField.Name("X-Other-Url")!] == "https://api.github.com/x")
        #expect(rewritten.map(\.name) == fields.map(\.name), "order kept")
    }

    @Test("a Host that is missing, too long or not a plain host:port rewrites nothing",
          arguments: [nil, "", "evil.example/x", "a b", "h\"><x", "a,b", "user@host", String(repeating: "a", count: 271)])
    func unusableHost(host: String?) {
        #expect(UpstreamLinkRewriter(upstream: URL(string: "https://api.github.com")!, clientAuthority: host) == nil)
    }

    @Test("IPv6 on both sides")
    func ipv6() throws {
        let rewriter = try #require(UpstreamLinkRewriter(upstream: URL(string: "http://[::1]:9000/v1")!, clientAuthority: "[::1]:8080"))
        #expect(Self.header(rewriter, "http://[::1]:9000/v1/x") == "http://[::1]:8080/x")
        #expect(Self.header(rewriter, "http://[::2]:9000/v1/x") == nil)
    }

    static func json(_ rewriter: UpstreamLinkRewriter, _ text: String) -> String? {
        rewriter.rewrittenJSON(Data(text.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("JSON: string values that are upstream URLs are rewritten; keys, text that mentions one, other origins and escapes stay")
    func jsonBodies() {
        let body = #"{"url":"https://api.github.com/repos/o/r","html_url":"https://github.com/o/r","issues_url":"https://api.github.com/repos/o/r/issues{/number}","https://api.github.com/key":1,"body":"see https://api.github.com/x","nested":[{"u" : "https://api.github.com/a"}],"escaped":"https:\/\/api.github.com\/b","odd":"https://api.github.com/\u0063","é":"ü"}"#
        #expect(Self.json(Self.github, body)
            == #"{"url":"http://127.0.0.1:8080/repos/o/r","html_url":"https://github.com/o/r","issues_url":"http://127.0.0.1:8080/repos/o/r/issues{/number}","https://api.github.com/key":1,"body":"see https://api.github.com/x","nested":[{"u" : "http://127.0.0.1:8080/a"}],"escaped":"http:\/\/127.0.0.1:8080\/b","odd":"https://api.github.com/\u0063","é":"ü"}"#)
        #expect(Self.json(Self.github, #"{"html_url":"https://github.com/o/r","n":1}"#) == nil)
        #expect(Self.json(Self.github, #"["unterminated https://api.github.com/x"#) == nil)
        #expect(Self.json(Self.github, #"["https://api.github.com/x", "unterminated"#) == #"["http://127.0.0.1:8080/x", "unterminated"#)
    }

    @Test("a body is rewritten only for a listed media type, whole, decodable and not a 206; digests go with it")
    func bodyConditions() {
        let original = Data(#"{"url":"https://api.github.com/repos/o/r"}"#.utf8)
        func run(_ contentType: String?, encoding: String? = nil, status: HTTPResponse.Status = .ok,
                 types: Set<String> = ["application/json"]) -> (Data, HTTPFields) {
            var fields = HTTPFields()
            if let contentType { fields[.contentType] = contentType }
            if let encoding { fields[.contentEncoding] = encoding }
            fields[HTTPField.Name("Content-Digest")!] = "sha-256=:x:"
            var body = original
            Self.github.rewriteBody(&body, fields: &fields, status: status, mediaTypes: types)
            return (body, fields)
        }
        let (rewritten, fields) = run("Application/JSON; charset=utf-8")
        #expect(String(decoding: rewritten, as: UTF8.self) == #"{"url":"http://127.0.0.1:8080/repos/o/r"}"#)
        #expect(fields[HTTPField.Name("Content-Digest")!] == nil)
        #expect(run("application/json", encoding: "identity").0 != original)
        for (body, fields) in [run("text/plain"), run("application/vnd.github+json"), run(nil), run("application/json", encoding: "gzip"),
                               run("application/json", status: .partialContent), run("application/json", types: [])] {
            #expect(body == original)
            #expect(fields[HTTPField.Name("Content-Digest")!] == "sha-256=:x:")
        }
    }

    @Test("a compressed body with an upstream URL goes out decoded and rewritten; one with none, or that does not decode, as it came")
    func compressedBodies() throws {
        // Python's gzip (mtime 0) and zlib of {"url":"https://api.github.com/repos/o/r"}, and gzip of
        // {"url":"https://example.com/elsewhere"}.
        let gzipped = try #require(Data(base64Encoded: "H4sIAAAAAAACA6tWKi3KUbJSyigpKSi20tdPLMjUS88syShN0kvOz9UvSi3IL9bP1y9SqgUAQbu7RyoAAAA="))
        let deflated = try #require(Data(base64Encoded: "eJyrViotylGyUsooKSkottLXTyzI1EvPLMkoTdJLzs/VL0otyC/Wz9cvUqoFADnwDsg="))
        let elsewhere = try #require(Data(base64Encoded: "H4sIAAAAAAACA6tWKi3KUbJSyigpKSi20tdPrUjMLchJ1UvOz9VPzSlOLc9ILUpVqgUARNH69CcAAAA="))
        func run(_ body: Data, encoding: String) -> (Data, HTTPFields) {
            var fields: HTTPFields = [.contentType: "application/json", .contentEncoding: encoding]
            var body = body
            Self.github.rewriteBody(&body, fields: &fields, status: .ok, mediaTypes: ["application/json"])
            return (body, fields)
        }
        for (body, encoding) in [(gzipped, "gzip"), (gzipped, "x-gzip"), (deflated, "deflate"), (gzipped, "identity, gzip")] {
            let (rewritten, fields) = run(body, encoding: encoding)
            #expect(String(decoding: rewritten, as: UTF8.self) == #"{"url":"http://127.0.0.1:8080/repos/o/r"}"#, "\(encoding)")
            #expect(fields[.contentEncoding] == nil, "decoded, so no coding left: \(encoding)")
        }
        for (body, encoding) in [(elsewhere, "gzip"), (gzipped, "compress"), (Data("not gzip".utf8), "gzip")] {
            let (unchanged, fields) = run(body, encoding: encoding)
            #expect(unchanged == body, "\(encoding)")
            #expect(fields[.contentEncoding] == encoding)
        }
        #expect(UpstreamLinkRewriter.isRewritable([.contentType: "application/json", .contentEncoding: "gzip"],
                                                  mediaTypes: ["application/json"]))
        #expect(!UpstreamLinkRewriter.isRewritable([.contentType: "application/json", .contentEncoding: "compress"],
                                                   mediaTypes: ["application/json"]))
    }

    @Test("a body full of tiny upstream URLs under a long Host grows no more than the bound, and is then passed unchanged")
    func bounded() throws {
        let host = String(repeating: "h", count: 260) + ":1"
        let rewriter = try #require(UpstreamLinkRewriter(upstream: URL(string: "http://a")!, clientAuthority: host))
        let small = "[" + Array(repeating: #""http://a""#, count: 10).joined(separator: ",") + "]"
        #expect(Self.json(rewriter, small)?.contains(host) == true, "a few grow past twice the body within the slack")
        let huge = "[" + Array(repeating: #""http://a""#, count: 20_000).joined(separator: ",") + "]"
        #expect(Self.json(rewriter, huge) == nil)
    }
}
