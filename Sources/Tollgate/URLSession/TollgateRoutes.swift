import Foundation
import Synchronization

/// Which gate answers a tollgated session's requests.
///
/// A `URLProtocol` is registered as a class, and Foundation makes its instances: it cannot be
/// handed a gate. So ``Foundation/URLSessionConfiguration/tollgated(by:naming:hosts:base:)``
/// records the gate here, process-wide, and the protocol finds it by the request's host: the
/// latest registration whose hosts include it (or that names none) answers. An app with one gate
/// needs no hosts; one with a gate per API names each one's hosts. A gate released by its owner
/// answers nothing more.
final class TollgateRoutes: Sendable {
    static let shared = TollgateRoutes()

    struct Route: Sendable {
        let gate: Gate
        let naming: EndpointNaming
    }

    private struct Registration: Sendable {
        weak var gate: Gate?
        let naming: EndpointNaming
        /// Lowercased hosts; nil for every host.
        let hosts: Set<String>?
    }

    private let registrations = Mutex<[Registration]>([])

    func register(_ gate: Gate, naming: EndpointNaming, hosts: Set<String>?) {
        let registration = Registration(gate: gate, naming: naming, hosts: hosts.map { Set($0.map { $0.lowercased() }) })
        registrations.withLock { registrations in
            registrations.removeAll { $0.gate == nil || ($0.gate === gate && $0.hosts == registration.hosts) }
            registrations.append(registration)
        }
    }

    func route(for url: URL?) -> Route? {
        let host = url?.host?.lowercased()
        return registrations.withLock { registrations in
            for registration in registrations.reversed() {
                guard let gate = registration.gate else { continue }
                if let hosts = registration.hosts, !hosts.contains(host ?? "") { continue }
                return Route(gate: gate, naming: registration.naming)
            }
            return nil
        }
    }
}
