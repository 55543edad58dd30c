/// Why the operators' listener could not start.
public enum AdminServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The address is not `HOST:PORT`.
    case invalidAddress(String, reason: String)
    /// A non-loopback address was given without a token: the listener would show the ledger to
    /// anyone who can reach it.
    case tokenRequired(String)
    /// Another socket holds the address.
    case addressInUse(String)
    /// The server did not start listening.
    case couldNotStart(String)

    public var description: String {
        switch self {
        case .invalidAddress(let address, let reason): "the admin address '\(address)' is invalid: \(reason)"
        case .tokenRequired(let address):
            "the admin listener on \(address) is reachable from other machines: give it a token (--admin-token or TOLLGATE_ADMIN_TOKEN)"
        case .addressInUse(let address): "the admin address \(address) is already in use"
        case .couldNotStart(let address): "the admin listener could not start on \(address)"
        }
    }
}
