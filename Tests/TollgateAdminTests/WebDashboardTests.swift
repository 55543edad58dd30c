import Foundation
import Testing
import TollgateAdmin
import TollgateCore
import TollgateSQLite
import TollgateTestSupport

@Suite("The web dashboard, in a real browser", .serialized)
struct WebDashboardTests {
    /// Where the screenshot is kept: `.build/test-artifacts/` of the package.
    static let artifacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: ".build/test-artifacts")

    /// The first element `<tag class="name" …>` (its attributes) and, for an `svg`, its content.
    static func elements(_ tag: String, class name: String, in html: String) -> [(attributes: [String: String], content: String)] {
        let pattern = tag == "svg"
            ? #"<svg class="\#(name)"([^>]*)>(.*?)</svg>"#
            : #"<\#(tag) class="\#(name)"([^>]*)>()"#
        let regex = try! NSRegularExpression(pattern: pattern, options: [.dotMatchesLineSeparators])
        let text = html as NSString
        return regex.matches(in: html, range: NSRange(location: 0, length: text.length)).map { match in
            (attributes(text.substring(with: match.range(at: 1))), text.substring(with: match.range(at: 2)))
        }
    }

    static func attributes(_ text: String) -> [String: String] {
        let regex = try! NSRegularExpression(pattern: #"([a-zA-Z-]+)="([^"]*)""#)
        let string = text as NSString
        var result: [String: String] = [:]
        for match in regex.matches(in: text, range: NSRange(location: 0, length: string.length)) {
            result[string.substring(with: match.range(at: 1))] = string.substring(with: match.range(at: 2))
                .replacingOccurrences(of: "&amp;", with: "&")
        }
        return result
    }

    @Test("Chromium renders every chart from a ledger with known contents; the screenshot is kept")
    func chartsInChromium() async throws {
        try #require(HeadlessChromium.executable != nil, "chromium is not installed: .ci/run installs it")
        let known = try await KnownLedger()
        let admin = try await AdminServer.start(
            listen: try AdminAddress(parsing: "127.0.0.1:0"),
            exposition: MetricsExposition(process: nil, reader: OperatorsSnapshotReader(storage: known.store, clock: known.clock),
                                          logger: quiet),
            databaseName: "known.sqlite", logger: quiet
        )
        defer { Task { await admin.stop() } }
        let page = admin.baseURL.appending(path: "/")
        let dom = try await offCooperativePool { try HeadlessChromium.dumpDOM(page) }

        // The burn chart: cumulative units since midnight, the limit, the forecast to exhaustion.
        let burns = Self.elements("svg", class: "chart burn", in: dom)
        let youtube = try #require(burns.first { $0.attributes["data-bucket"] == "youtube" }, "\(dom.prefix(2000))")
        #expect(youtube.attributes["data-limit"] == "10000")
        #expect(youtube.attributes["data-used"] == "4800")
        let used = try #require(Self.elements("polyline", class: "used", in: youtube.content).first)
        let points = (used.attributes["data-points"] ?? "").split(separator: " ").map(String.init)
        #expect(points.first == "0:0")
        #expect(points.contains("3600:0") && points.contains("3900:300"), "\(points)")
        #expect(points.contains("52200:4200") && points.contains("52500:4800"), "\(points)")
        #expect(points.last == "54000:4800")
        #expect(Self.elements("line", class: "limit", in: youtube.content).first?.attributes["data-units"] == "10000")
        let forecast = try #require(Self.elements("line", class: "forecast", in: youtube.content).first)
        #expect(forecast.attributes["data-from"] == "54000:4800")
        #expect(forecast.attributes["data-to"] == "74800:10000")
        #expect(forecast.attributes["data-units-per-hour"] == "900")
        #expect(forecast.attributes["stroke-dasharray"] != nil, "the forecast is dashed")
        let search = try #require(burns.first { $0.attributes["data-bucket"] == "youtube.search" })
        #expect(search.attributes["data-used"] == "2")

        // The cache's 14 days, oldest first, with the hit rate.
        let cache = try #require(Self.elements("svg", class: "chart cache", in: dom).first)
        let days = Self.elements("g", class: "day", in: cache.content).map(\.attributes)
        #expect(days.count == 14)
        #expect(days.last?["data-date"] == "2026-11-20")
        #expect(days.last?["data-hits"] == "33")
        #expect(days.first?["data-date"] == "2026-11-07")
        #expect(days.first?["data-hits"] == "20")
        #expect(days.last?["data-hit-rate"] == String(format: "%.4f", 38.0 / 41.0))
        #expect(cache.content.contains(#"class="hit-rate""#))

        // The circuit's transitions of the last 24 hours, in order.
        let circuits = try #require(Self.elements("svg", class: "chart circuits", in: dom).first)
        let transitions = Self.elements("circle", class: "transition", in: circuits.content).map(\.attributes)
        #expect(transitions.map { $0["data-to"] ?? "" } == ["open", "half_open", "closed"])
        #expect(transitions.first?["data-at"] == "2026-11-20T18:00:00Z")

        // The top endpoints by units today.
        let top = try #require(Self.elements("svg", class: "chart top-endpoints", in: dom).first)
        let endpoints = Self.elements("g", class: "endpoint", in: top.content).map(\.attributes)
        #expect(endpoints.map { $0["data-endpoint"] ?? "" } == ["videos.list", "search.list"])
        #expect(endpoints.first?["data-units"] == "4800")

        // /api/snapshot says the same.
        let json = try await ProxyWithAdmin.get("/api/snapshot", port: admin.address.port)
        #expect(json.headers["content-type"] == "application/json")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        let snapshot = try decoder.decode(OperatorsSnapshot.self, from: json.body)
        let series = try #require(snapshot.burn.first { $0.bucket == "youtube" })
        #expect(series.points.map { "\(Int($0.secondsSinceMidnight)):\($0.cumulativeUnits)" } == points)
        #expect(snapshot.forecast(of: "youtube")?.runsOutAt == KnownLedger.day.start.addingTimeInterval(74_800))

        let screenshot = Self.artifacts.appending(path: "web-dashboard.png")
        try await offCooperativePool { try HeadlessChromium.screenshot(page, to: screenshot, width: 1280, height: 1500) }
        let size = try FileManager.default.attributesOfItem(atPath: screenshot.path)[.size] as? Int ?? 0
        #expect(size > 20_000, "a blank page is a few kilobytes")
        print("web dashboard screenshot: \(screenshot.path)")
    }

    @Test("the page loads nothing from elsewhere and refreshes itself from /fragment")
    func selfContained() async throws {
        let known = try await KnownLedger()
        let admin = try await AdminServer.start(
            listen: try AdminAddress(parsing: "127.0.0.1:0"),
            exposition: MetricsExposition(process: nil, reader: OperatorsSnapshotReader(storage: known.store, clock: known.clock),
                                          logger: quiet),
            logger: quiet
        )
        defer { Task { await admin.stop() } }
        let page = try await ProxyWithAdmin.get("/", port: admin.address.port)
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)
        #expect(!html.contains("http://") || html.components(separatedBy: "http://").dropFirst().allSatisfy { $0.hasPrefix("www.w3.org/2000/svg") })
        #expect(!html.contains("https://"))
        #expect(!html.contains("<link"))
        #expect(html.contains(#"fetch("fragment""#))
        let fragment = try await ProxyWithAdmin.get("/fragment", port: admin.address.port)
        #expect(fragment.status == 200)
        #expect(String(decoding: fragment.body, as: UTF8.self).contains(#"<svg class="chart burn""#))
    }
}
