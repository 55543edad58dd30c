import TollgateCore

/// Which file a path named when a store opened it: a file unlinked or replaced under a running
/// process has another identity at the path, or none.
struct FileIdentity: Sendable, Hashable {
    let device: UInt64
    let inode: UInt64
}
