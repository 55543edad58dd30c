/// An error a store throws, able to say whether it is a failure of the storage itself.
///
/// The gate's ledger-failure policy applies to storage failures only: a full disk, a read-only
/// file, a lock held too long, a database server that cannot be reached. A request the store
/// refuses by the domain's rules (an invalid argument, a schema this library cannot continue) is
/// not one. Every store's error type adopts this protocol, so the gate tells the two apart the same
/// way on either store, without knowing the store.
public protocol StorageFailure: Error {
    /// Whether the store could not do its work although the request itself was valid: what a
    /// gate's ledger-failure policy applies to.
    var isStorageFailure: Bool { get }

    /// Whether the store refused because the app suspended it (see ``SuspendableStorage``): nothing
    /// is admitted meanwhile, whatever the ledger-failure policy.
    var isSuspension: Bool { get }
}

extension StorageFailure {
    /// A store that cannot be suspended never refuses for it.
    public var isSuspension: Bool { false }
}
