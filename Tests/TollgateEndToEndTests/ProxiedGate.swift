import Foundation
import Tollgate
import TollgateProxy
import TollgateTestSupport

/// A proxy in front of a scripted upstream over a gate on a file of its own, held together so the
/// gate's file lives as long as the proxy does.
struct ProxiedGate {
    let scripted: ScriptedGate
    let proxy: GateProxy

    /// Starts a proxy in front of `upstream` that rewrites the links in bodies of `bodyTypes`.
    static func start(in upstream: ScriptedHTTPServer, rewriting bodyTypes: Set<String> = []) async throws -> ProxiedGate {
        let scripted = try ScriptedGate(.asyncHTTPClient)
        let proxy = try await GateProxy.start(
            gate: scripted.gate, upstream: URL(string: upstream.baseURL)!, listen: try LoopbackAddress(parsing: "127.0.0.1:0"),
            rewrittenBodyTypes: bodyTypes
        )
        return ProxiedGate(scripted: scripted, proxy: proxy)
    }

    /// The gate behind the proxy.
    var gate: Gate { scripted.gate }

    func stop() async { await proxy.stop() }
}
