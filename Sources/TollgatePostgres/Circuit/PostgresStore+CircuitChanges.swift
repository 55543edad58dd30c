import PostgresNIO
import TollgateCore

/// A circuit's state change, committed by any machine of the fleet.
public struct CircuitChange: Sendable, Hashable {
    /// The endpoint whose circuit changed.
    public let endpoint: String
    /// The state it changed to.
    public let state: CircuitState

    /// Creates a change.
    /// - Parameters:
    ///   - endpoint: The endpoint whose circuit changed.
    ///   - state: The state it changed to.
    public init(endpoint: String, state: CircuitState) {
        self.endpoint = endpoint
        self.state = state
    }

    /// Reads a `tollgate_circuits` notification's payload, `<endpoint> <state>`; the endpoint may
    /// itself contain spaces, the state never does.
    init?(payload: String) {
        guard let space = payload.lastIndex(of: " "),
              let state = CircuitState(rawValue: String(payload[payload.index(after: space)...]))
        else { return nil }
        self.init(endpoint: String(payload[..<space]), state: state)
    }
}

extension PostgresStore {
    /// The channel every circuit state change is sent on (`NOTIFY`), at the commit that makes it.
    public static let circuitChannel = "tollgate_circuits"

    /// Calls `onChange` with each circuit state change any machine of the fleet commits, as the
    /// server delivers it (at commit), until the calling task is cancelled or the connection is lost.
    ///
    /// The gate does not need it: every admission reads the circuit's row, so a circuit opened on
    /// one machine refuses on the others from its commit on. It is for views that would otherwise
    /// poll (`tollgate dashboard` redraws at once). Changes made while nothing listens are not
    /// replayed: read ``allCircuits()`` after starting, and keep polling as the fallback.
    /// Holds one pooled connection while it runs.
    /// - Parameter onChange: Called with each change, in commit order.
    /// - Throws: ``PostgresStoreError`` when the server cannot be reached or the connection is lost.
    public func watchCircuitChanges(_ onChange: @escaping @Sendable (CircuitChange) -> Void) async throws {
        let logger = self.logger
        try await withConnection("listening for circuit changes") { connection in
            try await connection.listen(on: Self.circuitChannel) { notifications in
                for try await notification in notifications {
                    if let change = CircuitChange(payload: notification.payload) { onChange(change) }
                }
            }
            logger.debug("circuit notifications ended")
        }
    }
}
