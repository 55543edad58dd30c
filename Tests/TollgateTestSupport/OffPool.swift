import Dispatch

/// Runs blocking work (a child process, a poll, a script) on a dispatch thread, never on Swift
/// concurrency's cooperative pool: the fake API in a test's process answers on that pool, and a
/// child process that calls it would wait forever for a thread the test is blocking.
/// - Parameter body: The blocking work.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
    }
}
