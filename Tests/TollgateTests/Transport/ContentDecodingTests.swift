import Foundation
import HTTPTypes
import Testing
import Tollgate

@Suite("Content codings undone")
struct ContentDecodingTests {
    @Test("a gzip body of two members decodes whole (RFC 1952 §2.2); trailing bytes that are no member fail it")
    func multipleMembers() throws {
        // Python: gzip.compress(b'{"items":["first half, ') + gzip.compress(b'second half"]}'), mtime 0.
        let twoMembers = try #require(Data(base64Encoded:
            "H4sIAAAAAAACA6tWyixJzS1WsopWSsssKi5RyEjMSdNRAAAWx+1FFwAAAB+LCAAAAAAAAgMrTk3Oz0tRyEjMSVOKrQUA14xI3A4AAAA="))
        let fields: HTTPFields = [.contentEncoding: "gzip"]
        let decoded = try #require(ContentDecoding.decoded(twoMembers, fields: fields))
        #expect(String(decoding: decoded, as: UTF8.self) == #"{"items":["first half, second half"]}"#)
        #expect(ContentDecoding.decoded(twoMembers + Data("not a member".utf8), fields: fields) == nil)
    }
}
