import Foundation
import Testing
import TollgateTestSupport

/// A library logs like a library: an app that bootstraps no logging (swift-log's default handler
/// writes info and above to standard error) sees no line for what happens on every request.
@Suite("An app that bootstraps no logging: nothing on stderr for opening a store, being throttled or served from the cache")
struct QuietLibraryTests {
    @Test("a new store's migrations, two throttled requests and a cache hit write nothing to stderr")
    func quietByDefault() async throws {
        let directory = try TemporaryDirectory()
        let results = try await WorkerProcess.runConcurrently("quiet-app", count: 1) { _ in [directory.path("app.sqlite")] }
        let result = try #require(results.first)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "answered 2 throttled 2")
        #expect(result.stderr.isEmpty, "the library wrote: \(result.stderr)")
    }
}
