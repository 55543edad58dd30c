/// Runs `body` with a server or fixture, then stops it whatever happened: a failed `#require`, a
/// thrown error or an early `return` in `body` can no longer leave it running for the rest of the
/// test run (Swift's `defer` cannot `await` a `stop()`).
/// - Parameters:
///   - resource: The started server or fixture.
///   - stop: How to stop it.
///   - body: The test's work with it.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws, after `stop`.
public func withStopping<Resource, Result>(
    _ resource: Resource, stop: (Resource) async -> Void, _ body: (Resource) async throws -> Result
) async throws -> Result {
    let result: Result
    do {
        result = try await body(resource)
    } catch {
        await stop(resource)
        throw error
    }
    await stop(resource)
    return result
}
