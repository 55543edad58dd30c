import Foundation
import HTTPTypes
import Synchronization
import Tollgate

/// The end-to-end scenario's transport through the gate: the bare transport, with when its last
/// send began and ended kept, so a 304's time through the gate splits into the gate's own work
/// before the request, the exchange itself, and the gate's work after it.
public final class TimedTransport: HTTPTransport {
    let inner: URLSessionTransport
    /// `Timing.now` when the last send began and ended.
    public let started = Atomic<UInt64>(0)
    public let ended = Atomic<UInt64>(0)

    init(_ inner: URLSessionTransport) { self.inner = inner }

    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        started.store(Timing.now, ordering: .relaxed)
        defer { ended.store(Timing.now, ordering: .relaxed) }
        return try await inner.send(request, body: body)
    }
}
