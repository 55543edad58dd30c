import Foundation
import Testing
import TollgateTestSupport

/// README.md is the front door: what it tells a newcomer to type must work as written. Its blocks
/// fenced as ```` ```sh no-network ```` are run here, in order, in one shell in an empty directory,
/// with the built `tollgate` first on the PATH, as a reader who built it would run them.
@Suite("README.md, as a newcomer reads it")
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The blocks fenced ```` ```sh no-network ````, in the order they appear.
    static func offlineBlocks(of markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```sh no-network" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test("every command of its no-network blocks exits 0 and prints what the README says it shows")
    func offlineBlocksRun() throws {
        let readme = try String(contentsOf: Self.root.appending(path: "README.md"), encoding: .utf8)
        let blocks = Self.offlineBlocks(of: readme)
        try #require(blocks.count >= 2, "README.md has no `sh no-network` blocks left to run")
        let directory = try TemporaryDirectory()
        // -x: the failing command is named in stderr; -e and pipefail: the first failure stops it.
        let script = "set -euxo pipefail\ncd '\(directory.url.path)'\n" + blocks.joined(separator: "\n")
        let result = try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["bash", "-c", script], environment: [
            "PATH": CommandRunner.productsDirectory.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
        ])
        #expect(result.status == 0, "a README command failed:\n\(result.stderr.suffix(2_000))")
        // What the block says each command shows.
        #expect(result.stdout.contains("videos.list"), "quota show names the demo's endpoints")
        #expect(result.stdout.contains("daily limit 1,000,000"), "set-limit says what it set")
        #expect(result.stdout.contains("pacific_date"), "sqlite3 printed the views' headers")
        let status = try Data(contentsOf: URL(fileURLWithPath: directory.path("status.json")))
        #expect(try JSONSerialization.jsonObject(with: status) is [String: Any], "status --json is one JSON object")
    }

    @Test("README.md stays a front door: about 250 lines at most, and every link to Docs/ leads to a file")
    func frontDoor() throws {
        let readme = try String(contentsOf: Self.root.appending(path: "README.md"), encoding: .utf8)
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 250)
        let links = readme.matches(of: /\]\((Docs\/[^)#]+)\)/).map { String($0.output.1) }
        #expect(links.count >= 5)
        for link in links {
            #expect(FileManager.default.fileExists(atPath: Self.root.appending(path: link).path), "\(link) is missing")
        }
        let contents = try String(contentsOf: Self.root.appending(path: "Docs/README.md"), encoding: .utf8)
        let pages = try FileManager.default.contentsOfDirectory(atPath: Self.root.appending(path: "Docs").path)
            .filter { $0.hasSuffix(".md") && $0 != "README.md" }
        for page in pages {
            #expect(contents.contains("(\(page))"), "Docs/README.md does not list \(page)")
        }
    }
}
