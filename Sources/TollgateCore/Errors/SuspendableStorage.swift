/// A store an app suspends while it is in the background, so that it holds no lock on a shared
/// file (iOS terminates a suspended app that does: `0xdead10cc`).
///
/// The gate's URLSession drop-in asks before it sends: while the store is suspended, no request
/// goes out, because none could be charged.
public protocol SuspendableStorage: Sendable {
    /// The error every operation fails with while the store is suspended, or `nil` when it is not.
    var suspensionError: (any StorageFailure)? { get }
}
