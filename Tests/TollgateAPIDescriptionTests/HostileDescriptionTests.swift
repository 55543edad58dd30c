import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateTestSupport
@testable import TollgateAPIDescription

/// Issue 36's findings in description files: numbers that trapped, aliases that fanned out, names
/// that reach a terminal, and files `api check` passed that the gate then refused.
@Suite("Hostile description files: refused at their line, never crashing, never passed to fail later")
struct HostileDescriptionTests {
    private static let head = "api: X\nbuckets:\n  b: {limit: 10}\ndefaults:\n  bucket: b\n"

    @Test("durations past 366 days, or under a millisecond, are refused at their file:line:column", arguments: [
        (head + "  throttle: {requests: 5, per: 1e16s}\n", 6, "defaults.throttle.per", "longer than"),
        (head + "  circuit: {failures: 5, open: 1e300d}\n", 6, "defaults.circuit.open", "longer than"),
        (head + "  retry: {max_retries: 3, initial_delay: 10000000000s}\n", 6, "defaults.retry.initial_delay", "longer than"),
        ("api: X\nbuckets:\n  b: {limit: 10, window: {rolling: 1e16s}}\ndefaults: {bucket: b}\n", 3, "buckets.b.window.rolling", "longer than"),
        (head + "  throttle: {requests: 5, per: 0.0001s}\n", 6, "defaults.throttle.per", "shorter than a millisecond"),
    ])
    func absurdDurations(yaml: String, line: Int, key: String, message: String) {
        let error = #expect(throws: APIDescriptionError.self) { try APIDescription(yaml: yaml, file: "mine.yaml") }
        #expect(error?.line == line, "\(String(describing: error))")
        #expect(error?.column != nil, "\(String(describing: error))")
        #expect(error?.key == key, "\(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test("a retry delay at the maximum a description allows is a delay, not a trap")
    func longestRetryDelayIsSafe() throws {
        let yaml = Self.head + "  retry: {max_retries: 3, initial_delay: 366d, multiplier: 1e300, max_delay: 366d}\n"
        let configuration = try APIDescription(yaml: yaml).gateConfiguration()
        var generator = SeededGenerator(seed: 1)
        let delay = configuration.retry.delay(forRetry: 3, retryAfter: nil, now: Date(), using: &generator)
        guard case .wait(let duration) = delay else { Issue.record("\(delay)"); return }
        #expect(duration <= .seconds(366 * 86_400))
    }

    @Test("YAML aliases that expand past 200,000 values are refused, quickly, with a clear error")
    func aliasFanOut() {
        // The issue's shape: one anchored list of charges reused by every endpoint.
        var yaml = "api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nx-charges: &charges ["
        yaml += (0..<3_000).map { "{bucket: b, units: \($0 % 7)}" }.joined(separator: ", ") + "]\nendpoints:\n"
        for index in 0..<3_000 { yaml += "  e\(index): {charges: *charges}\n" }
        let error = #expect(throws: APIDescriptionError.self) { try APIDescription(yaml: yaml, file: "fan.yaml") }
        #expect(error?.message.contains("YAML aliases") == true, "\(String(describing: error))")
        // A real description with a few aliases reads as before.
        let small = "api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e1: &rule {cost: 2}\n  e2: *rule\n"
        #expect(throws: Never.self) { try APIDescription(yaml: small) }
    }

    @Test("a key given twice, and nesting too deep for the parser, are named at their line and column")
    func duplicateKeysPlaced() {
        let yaml = "api: X\nbuckets:\n  b: {limit: 10}\n  b: {limit: 20}\ndefaults: {bucket: b}\n"
        let error = #expect(throws: APIDescriptionError.self) { try APIDescription(yaml: yaml, file: "twice.yaml") }
        #expect(error?.line != nil && error?.column != nil, "\(String(describing: error))")
        let deep = "api: " + String(repeating: "[", count: 20_000) + String(repeating: "]", count: 20_000) + "\n"
        let tooDeep = #expect(throws: APIDescriptionError.self) { try APIDescription(yaml: deep, file: "deep.yaml") }
        #expect(tooDeep?.line != nil, "\(String(describing: tooDeep))")
    }

    @Test("control characters in names never reach a terminal: refused at their line", arguments: [
        "api: \"X\\e[2J\"\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\n",
        "api: X\nbuckets:\n  \"b\\nforged line\": {limit: 10}\ndefaults: {bucket: b}\n",
        "api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nroutes:\n  - {path: /a, endpoint: \"a\\u001b]0;title\\u0007\"}\n",
    ])
    func controlCharacters(yaml: String) {
        let error = #expect(throws: APIDescriptionError.self) { try APIDescription(yaml: yaml, file: "esc.yaml") }
        #expect(error?.message.contains("control characters") == true, "\(String(describing: error))")
        #expect(error?.line != nil)
    }

    @Test("what the gate refuses, api check refuses: '*' as an endpoint, a name past 200 bytes", arguments: [
        "api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  \"*\": {cost: 1}\n",
        "api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nroutes:\n  - {path: /a, endpoint: \"\(String(repeating: "n", count: 201))\"}\n",
    ])
    func gateRefusalsCheckedEarly(yaml: String) throws {
        let description = try APIDescription(yaml: yaml, file: "early.yaml")
        #expect(throws: APIDescriptionError.self) { try description.gateConfiguration() }
    }

    @Test("a file of the operator's named like a shipped description is the one read")
    func localFileWins() throws {
        let directory = try TemporaryDirectory()
        let previous = FileManager.default.currentDirectoryPath
        _ = FileManager.default.changeCurrentDirectoryPath(directory.url.path)
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        try Data("api: My own\nbuckets:\n  b: {limit: 7}\ndefaults: {bucket: b}\n".utf8).write(to: directory.url.appending(path: "github-rest"))
        #expect(try APIDescription.named("github-rest").name == "My own")
        #expect(try APIDescription.named("openai-chat").name != "My own")
    }

    @Test("route values past 100 per template fold into one name; a value seen before keeps its own")
    func namesFoldPerTemplate() throws {
        let naming = try APIDescription.named("github-rest").naming
        func name(_ path: String) -> String {
            naming.endpoint(for: HTTPRequest(method: .get, scheme: "https", authority: "api.github.com", path: path))
        }
        for index in 0..<100 { #expect(name("/repos/o/r/c\(index)") == "repos.c\(index).list") }
        #expect(name("/repos/o/r/c100") == "repos.other.list")
        #expect(name("/repos/o/r/c5000") == "repos.other.list")
        #expect(name("/repos/o/r/c7") == "repos.c7.list")
        // Another template has a budget of its own; a name without a parameter never folds.
        #expect(name("/users/u/followers") == "users.followers.list")
        #expect(name("/repos/o/r") == "repos.get")
        // Unmatched paths fold per method.
        for index in 0..<100 { _ = name("/nowhere/\(index)") }
        #expect(name("/nowhere/x") == "GET (other paths)")
    }

    @Test("endpoint names are at most 200 bytes, and two long names stay apart")
    func longNamesCapped() {
        let long = "GET /" + String(repeating: "é", count: 300)
        let capped = EndpointNameBudget.capped(long)
        #expect(capped.utf8.count <= EndpointNameBudget.maximumNameBytes)
        #expect(capped != EndpointNameBudget.capped(long + "x"))
        #expect(EndpointNameBudget.capped("videos.list") == "videos.list")
    }
}
