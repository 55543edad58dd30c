import Foundation
import Testing
import TollgateTestSupport

/// `tollgate proxy` in front of an origin whose keep-alive ends as the proxy reuses a connection:
/// curl gets the answer, not a 502, and the ledger charges the one request curl made.
@Suite("tollgate proxy and a kept-alive upstream connection closed as it is reused")
struct ProxyReusedConnectionTests {
    @Test("the GET is sent again on a new connection, answered, and charged once")
    func getIsAnsweredAndChargedOnce() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        let origin = try await KeepAliveEndingServer()
        try await withStopping(origin, stop: { await $0.stop() }) { origin in
            let directory = try TemporaryDirectory()
            let database = directory.path("reused.sqlite")
            let (proxy, base) = try BackgroundCommand.proxy(["--upstream", origin.baseURL, "--db", database])
            let first = try await offPool { try CurlResponse.fetch("\(base)/first") }
            #expect(first.status == 200)
            #expect(first.body == "answer 1")

            let second = try await offPool { try CurlResponse.fetch("\(base)/second") }
            #expect(second.status == 200, "not a 502: \(second.body)")
            #expect(second.body == "answer 3")
            #expect(second.headers["x-tollgate-source"] == "network")
            #expect(origin.requests == ["GET /first", "GET /second", "GET /second"])
            #expect(origin.connections == 2)
            #expect(proxy.interrupt().status == 0)
            // One charge per request curl made: the resend is the transport's, inside one admission.
            #expect(try CommandRunner.sqliteValue(database, "SELECT COUNT(*) FROM quota_events WHERE kind = 'charge'") == "2")
            #expect(try CommandRunner.totalsDifferingFromEvents(database) == "0")
        }
    }
}
