import Foundation
import Testing

@Suite("The published project's workflow")
struct WorkflowFileTests {
    /// The package's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("ci.yml is valid YAML with the Linux, macOS and Apple-platform jobs, as a YAML parser reads it")
    func workflowParses() throws {
        let path = Self.root.appending(path: ".github/workflows/ci.yml").path
        let script = """
            import json, sys, yaml
            workflow = yaml.safe_load(open(sys.argv[1]))
            jobs = workflow["jobs"]
            print(json.dumps({
                "jobs": sorted(jobs),
                "linux": [step.get("run", "") for step in jobs["linux"]["steps"]],
                "destinations": jobs["apple-platforms"]["strategy"]["matrix"]["destination"],
                "apple": [step.get("run", "") for step in jobs["apple-platforms"]["steps"]],
            }))
            """
        let result = try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, path])
        #expect(result.status == 0, "\(result.stderr)")
        struct Parsed: Decodable {
            let jobs: [String]
            let linux: [String]
            let destinations: [String]
            let apple: [String]
        }
        let parsed = try JSONDecoder().decode(Parsed.self, from: Data(result.stdout.utf8))
        #expect(parsed.jobs == ["apple-platforms", "linux", "macos"])
        #expect(parsed.linux.contains("bash .ci/run"))
        #expect(parsed.destinations.contains("generic/platform=iOS Simulator"))
        #expect(parsed.destinations.contains("generic/platform=visionOS Simulator"))
        #expect(parsed.apple.contains { $0.contains("xcodebuild -scheme") })
    }
}
