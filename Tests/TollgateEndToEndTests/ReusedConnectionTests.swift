import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateAsyncHTTPClient
import TollgateTestSupport

/// A server that closes a kept-alive connection as the client reuses it, before any answer: an
/// idempotent request is sent again on another connection (RFC 9112 §9.3.1), once, so the caller
/// (a proxy's client) gets the answer, not a 502; a POST, which the server may have acted on, is not.
@Suite("A kept-alive connection closed as it is reused")
struct ReusedConnectionTests {
    @Test("a GET is sent again on a new connection, and answered", arguments: [HTTPRequest.Method.get, .head, .put, .delete])
    func idempotentRequestIsSentAgain(method: HTTPRequest.Method) async throws {
        let server = try await KeepAliveEndingServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let transport = AsyncHTTPClientTransport(timeout: .seconds(10))
            let first = try #require(URL(string: server.baseURL + "/first"))
            let second = try #require(URL(string: server.baseURL + "/second"))
            let (answer, _) = try await transport.send(.get(first), body: nil)
            #expect(answer.status.code == 200)

            var request = HTTPRequest.get(second)
            request.method = method
            let (again, body) = try await transport.send(request, body: method == .put ? Data("{}".utf8) : nil)
            #expect(again.status.code == 200)
            if method != .head { #expect(String(decoding: body, as: UTF8.self) == "answer 3") }
            #expect(server.requests == ["GET /first", "\(method.rawValue) /second", "\(method.rawValue) /second"],
                    "read once on the closed connection, answered on the new one")
            #expect(server.connections == 2)
        }
    }

    @Test("two pooled connections closed at once: the request is sent twice, not more, and the caller is told")
    func severalClosedConnections() async throws {
        for pooled in [1, 2] {
            let server = try await KeepAliveEndingServer()
            try await withStopping(server, stop: { await $0.stop() }) { server in
                let transport = AsyncHTTPClientTransport(timeout: .seconds(10))
                // Concurrent first requests: a connection each, all kept alive in the pool.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<pooled {
                        let url = try #require(URL(string: server.baseURL + "/first\(index)"))
                        group.addTask { _ = try await transport.send(.get(url), body: nil) }
                    }
                    try await group.waitForAll()
                }
                try #require(server.connections == pooled, "the pool holds \(pooled) connections")
                let second = try #require(URL(string: server.baseURL + "/second"))
                if pooled == 1 {
                    let (answer, _) = try await transport.send(.get(second), body: nil)
                    #expect(answer.status.code == 200, "one closed, then a new connection")
                    #expect(server.requests.filter { $0 == "GET /second" }.count == 2)
                } else {
                    await #expect {
                        _ = try await transport.send(.get(second), body: nil)
                    } throws: { error in
                        guard case HTTPTransportError.connectionFailed = error else { return false }
                        return true
                    }
                    #expect(server.requests.filter { $0 == "GET /second" }.count == 1 + AsyncHTTPClientTransport.maximumResends)
                }
            }
        }
    }

    @Test("a POST is not sent again: the caller is told the connection failed", arguments: [HTTPRequest.Method.post, .patch])
    func postIsNotSentAgain(method: HTTPRequest.Method) async throws {
        let server = try await KeepAliveEndingServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let transport = AsyncHTTPClientTransport(timeout: .seconds(10))
            let first = try #require(URL(string: server.baseURL + "/first"))
            let second = try #require(URL(string: server.baseURL + "/second"))
            _ = try await transport.send(.get(first), body: nil)

            var request = HTTPRequest.get(second)
            request.method = method
            await #expect {
                _ = try await transport.send(request, body: Data("{\"title\":\"new\"}".utf8))
            } throws: { error in
                guard case HTTPTransportError.connectionFailed = error else { return false }
                return true
            }
            #expect(server.requests == ["GET /first", "\(method.rawValue) /second"], "sent once")
        }
    }
}
