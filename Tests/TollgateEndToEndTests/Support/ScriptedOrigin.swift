import Foundation
import Synchronization
import TollgateTestSupport

/// A loopback origin for the RFC 9111 suites: `ScriptedHTTPServer` with an answer that a test can
/// replace between requests, and the shapes those suites read (`received`, `url(_:)`).
final class ScriptedOrigin: Sendable {
    struct Received: Sendable {
        var method: String
        var target: String
        var headers: [(String, String)]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    struct Answer: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: Data

        init(_ status: Int = 200, _ headers: [(String, String)] = [], body: String = "") {
            self.status = status
            self.headers = headers
            self.body = Data(body.utf8)
        }
    }

    /// The script in force, replaced by ``answer(_:)``.
    private final class Script: Sendable {
        let handler: Mutex<@Sendable (Received) -> Answer>
        init(_ handler: @escaping @Sendable (Received) -> Answer) { self.handler = Mutex(handler) }
    }

    private let server: ScriptedHTTPServer
    private let script: Script

    var port: Int { server.port }

    /// Requests received so far, in order.
    var received: [Received] {
        server.requests.map { Received(method: $0.method, target: $0.target, headers: $0.headers.map { ($0.name, $0.value) }) }
    }

    /// Replaces what the origin answers.
    func answer(_ handler: @escaping @Sendable (Received) -> Answer) {
        script.handler.withLock { $0 = handler }
    }

    /// `http://127.0.0.1:PORT` + path.
    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    init(_ handler: @escaping @Sendable (Received) -> Answer = { _ in Answer() }) throws {
        let script = Script(handler)
        self.script = script
        server = try ScriptedHTTPServer { request in
            let received = Received(method: request.method, target: request.target,
                                    headers: request.headers.map { ($0.name, $0.value) })
            let answer = script.handler.withLock { $0 }(received)
            return .init(status: answer.status, headers: answer.headers.map { (name: $0.0, value: $0.1) }, body: answer.body)
        }
    }

    /// Closes the listening socket: later requests fail to connect.
    func stop() {
        server.stop()
    }
}
