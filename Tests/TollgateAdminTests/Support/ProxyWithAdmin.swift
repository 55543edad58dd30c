import Foundation
import Logging
import Tollgate
import TollgateAdmin
import TollgateProxy
import TollgateSQLite
import TollgateTestSupport

/// A proxy and its admin listener over one SQLite file, as `tollgate proxy --admin` runs them.
struct ProxyWithAdmin {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let gate: Gate
    let proxy: GateProxy
    let admin: AdminServer

    init(upstream: URL, token: String? = nil, configuration: GateConfiguration = .youTubeDataAPIv3) async throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("tollgate.sqlite"), logger: quiet)
        let metrics = ProcessMetrics()
        gate = try Gate(storage: store, transport: URLSessionTransport(), configuration: configuration,
                        clock: SystemClock(), logger: quiet, metrics: metrics.factory)
        proxy = try await GateProxy.start(gate: gate, upstream: upstream, listen: try LoopbackAddress(parsing: "127.0.0.1:0"),
                                          logger: quiet)
        // As `tollgate proxy --admin` does: the freshness shown is the one this gate serves by.
        var reader = OperatorsSnapshotReader(storage: store)
        reader.freshness = { [gate] in await gate.freshnessInForce() }
        admin = try await AdminServer.start(
            listen: try AdminAddress(parsing: "127.0.0.1:0"),
            exposition: MetricsExposition(process: metrics, reader: reader, logger: quiet),
            databaseName: "tollgate.sqlite", token: token, logger: quiet
        )
    }

    /// Runs `body` with a proxy and its listener, and stops both however `body` ends.
    static func with(
        upstream: URL, token: String? = nil, configuration: GateConfiguration = .youTubeDataAPIv3,
        _ body: (ProxyWithAdmin) async throws -> Void
    ) async throws {
        let harness = try await ProxyWithAdmin(upstream: upstream, token: token, configuration: configuration)
        do {
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    func stop() async {
        await proxy.stop()
        await admin.stop()
        try? await gate.flush()
    }

    /// A GET through the proxy.
    func get(_ target: String) async throws -> RawHTTPClient.Answer {
        try await Self.get(target, port: proxy.address.port)
    }

    /// A GET to the admin listener.
    func admin(_ target: String, headers: [String] = []) async throws -> RawHTTPClient.Answer {
        try await Self.get(target, port: admin.address.port, headers: headers)
    }

    static func get(_ target: String, port: Int, headers: [String] = []) async throws -> RawHTTPClient.Answer {
        var text = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for header in headers { text += header + "\r\n" }
        text += "\r\n"
        let head = text
        return try await offCooperativePool { try RawHTTPClient.exchange(port: port, head) }
    }
}

let quiet = Logger(label: "tollgate.admin.tests", factory: { _ in SwiftLogNoOpLogHandler() })

/// Runs blocking socket or process work on a thread of its own, so loopback servers in this
/// process keep the cooperative threads.
func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// An origin that answers every resource with an ETag, and 304 to a request that carries it.
func etagOrigin(extraHeaders: [(name: String, value: String)] = []) throws -> ScriptedHTTPServer {
    try ScriptedHTTPServer { request in
        let tag = "\"\(request.target.hashValue & 0xffff)\""
        if request.header("If-None-Match") == tag {
            return .init(status: 304, headers: [("ETag", tag)])
        }
        return .init(headers: [("Content-Type", "application/json"), ("ETag", tag)] + extraHeaders,
                     body: #"{"items":[]}"#)
    }
}
