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
}
