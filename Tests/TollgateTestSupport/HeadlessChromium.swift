import Foundation

/// Debian's `chromium` in headless mode (installed by .ci/run): loads a page as a browser does,
/// runs its script, and gives back the rendered DOM or a screenshot.
public enum HeadlessChromium {
    /// The browser's path, or nil when it is not installed.
    public static var executable: URL? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(URL.init(fileURLWithPath:))
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Why the browser could not do what was asked.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private static func arguments(_ profile: String) -> [String] {
        // Root (CI) needs --no-sandbox; a profile of its own keeps runs apart.
        ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--hide-scrollbars", "--user-data-dir=\(profile)", "--virtual-time-budget=2000"]
    }

    /// The DOM after the page loaded and its scripts ran (`--dump-dom`).
    /// - Parameter url: The page.
    /// - Returns: The serialised DOM.
    /// - Throws: ``Failure`` when the browser is missing or fails.
    public static func dumpDOM(_ url: URL) throws -> String {
        guard let executable else { throw Failure(description: "chromium is not installed (apt-get install chromium)") }
        let profile = try TemporaryDirectory()
        let result = try withExtendedLifetime(profile) {
            try ChildProcess.run(executable, arguments(profile.url.path) + ["--dump-dom", url.absoluteString], timeLimit: 90)
        }
        guard result.status == 0, !result.stdout.isEmpty else {
            throw Failure(description: "chromium --dump-dom exited \(result.status): \(result.stderr.suffix(2000))")
        }
        return result.stdout
    }

    /// Saves a PNG screenshot of the page.
    /// - Parameters:
    ///   - url: The page.
    ///   - file: Where to write the PNG.
    ///   - width: The window's width.
    ///   - height: The window's height.
    /// - Throws: ``Failure`` when the browser is missing or fails.
    public static func screenshot(_ url: URL, to file: URL, width: Int = 1280, height: Int = 1600) throws {
        guard let executable else { throw Failure(description: "chromium is not installed (apt-get install chromium)") }
        let profile = try TemporaryDirectory()
        try? FileManager.default.removeItem(at: file)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let result = try withExtendedLifetime(profile) {
            try ChildProcess.run(executable, arguments(profile.url.path) + [
                "--screenshot=\(file.path)", "--window-size=\(width),\(height)", url.absoluteString,
            ], timeLimit: 90)
        }
        guard result.status == 0, FileManager.default.fileExists(atPath: file.path) else {
            throw Failure(description: "chromium --screenshot exited \(result.status): \(result.stderr.suffix(2000))")
        }
    }
}
