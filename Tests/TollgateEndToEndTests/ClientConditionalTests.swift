import HTTPTypes
import Testing
@testable import TollgateProxy

@Suite("ClientConditional: a client's own If-None-Match that names the answer's tag earns a 304")
struct ClientConditionalTests {
    static func check(
        _ ifNoneMatch: [String], etag: String? = #""v1""#, method: HTTPRequest.Method = .get, status: HTTPResponse.Status = .ok
    ) -> Bool {
        var request = HTTPFields()
        for value in ifNoneMatch { request.append(HTTPField(name: .ifNoneMatch, value: value)) }
        var response = HTTPFields()
        if let etag { response[.eTag] = etag }
        return ClientConditional.isNotModified(method: method, requestFields: request, status: status, responseFields: response)
    }

    @Test("weak comparison over the list, W/ on either side, * for any tag")
    func matches() {
        #expect(Self.check([#""v1""#]))
        #expect(Self.check([#"W/"v1""#]))
        #expect(Self.check([#""v0", "v1""#]))
        #expect(Self.check([#""v0""#, #""v1""#]))
        #expect(Self.check(["*"]))
        #expect(Self.check([#""v1""#], etag: #"W/"v1""#))
        #expect(Self.check([#""a,b""#], etag: #""a,b""#))
        #expect(Self.check([#""v1""#], method: .head))
    }

    @Test("no condition, another tag, no tag, a status other than 200 or a method other than GET and HEAD: the answer as it is")
    func doesNotMatch() {
        #expect(!Self.check([]))
        #expect(!Self.check([#""v2""#]))
        #expect(!Self.check([#""v"#]))
        #expect(!Self.check(["*"], etag: nil))
        #expect(!Self.check([#""v1""#], status: .notFound))
        #expect(!Self.check([#""v1""#], method: .post))
        #expect(!Self.check([#""v1""#], etag: "v1"), "an unquoted tag is no entity tag")
    }

    @Test("If-Match and If-Range go upstream with the upstream's own tags: W/ taken off, a comma inside a tag kept, * and dates as they were")
    func restoresUpstreamTags() {
        func restored(_ name: HTTPField.Name, _ values: [String]) -> [String] {
            var fields = HTTPFields()
            for value in values { fields.append(HTTPField(name: name, value: value)) }
            ClientConditional.restoreUpstreamTags(in: &fields)
            return fields[values: name]
        }
        #expect(restored(.ifMatch, [#"W/"g1""#]) == [#""g1""#])
        #expect(restored(.ifMatch, [#"W/"a,b", "c""#, #"W/"d""#]) == [#""a,b", "c", "d""#])
        #expect(restored(.ifMatch, ["*"]) == ["*"])
        #expect(restored(.ifRange, [#"W/"g1""#]) == [#""g1""#])
        #expect(restored(.ifRange, ["Wed, 21 Oct 2026 07:28:00 GMT"]) == ["Wed, 21 Oct 2026 07:28:00 GMT"])
        #expect(restored(.ifNoneMatch, [#"W/"g1""#]) == [#"W/"g1""#], "If-None-Match compares weakly: left alone")
    }

    @Test("If-Modified-Since without If-None-Match: compared with Last-Modified, else with the answer's Date (RFC 9111 §4.3.2)")
    func modifiedSince() {
        func check(_ since: String, _ response: [(HTTPField.Name, String)]) -> Bool {
            var request = HTTPFields()
            request[.ifModifiedSince] = since
            var fields = HTTPFields()
            for (name, value) in response { fields[name] = value }
            return ClientConditional.isNotModified(method: .get, requestFields: request, status: .ok, responseFields: fields)
        }
        let noon = "Tue, 01 Sep 2026 12:00:00 GMT", morning = "Tue, 01 Sep 2026 09:00:00 GMT"
        #expect(check(noon, [(.lastModified, morning)]))
        #expect(!check(morning, [(.lastModified, noon)]))
        #expect(check(noon, [(.date, morning)]), "no Last-Modified: the Date")
        #expect(!check(morning, [(.date, noon)]))
        #expect(check(noon, [(.lastModified, noon), (.date, "Wed, 02 Sep 2026 12:00:00 GMT")]), "Last-Modified first, a later Date notwithstanding")
        #expect(!check("yesterday", [(.date, morning)]), "not a date: ignored")
    }
}
