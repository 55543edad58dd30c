import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateTestSupport

/// Issue 36: every number from outside — a header's reset, a body's token count — is checked and
/// clamped where it becomes a number, and a far reset is no reading of a window.
@Suite("Hostile numbers: saturating conversions, far resets ignored, huge costs clamped, compressed bodies read")
struct HostileNumberTests {
    static let conversions: [(Double, Int64)] = [
        (1e16 * 1000, .max), (.infinity, .max), (-.infinity, .min),
        (.nan, 0), (1e300, .max), (-1e300, .min), (12.9, 12), (-0.5, -1),
    ]

    @Test("Conversions saturate instead of trapping", arguments: conversions)
    func saturating(value: Double, expected: Int64) {
        #expect(SaturatingConversion.int64(value) == expected)
    }

    @Test("A date far past the year 9999 has milliseconds, and a duration of centuries is bounded")
    func farDates() {
        let far = Date(timeIntervalSince1970: Double(Int64.max))
        #expect(far.millisecondsSince1970 == .max)
        #expect(SaturatingConversion.duration(seconds: 1e300) == .seconds(SaturatingConversion.maximumDurationSeconds))
        #expect(TollgateError.throttled(retryAfter: 1e300).description.contains("9223372036854775807"))
    }

    @Test("An announced reset further than one window past the window's end does not move it")
    func farResetIgnored() {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let hour = QuotaWindow.hour.naturalPeriod(containing: now)
        #expect(QuotaRules.announcedResetMovesEnd(hour.end.addingTimeInterval(1_800), of: hour, now: now))
        #expect(QuotaRules.announcedResetMovesEnd(hour.end.addingTimeInterval(3_600), of: hour, now: now))
        #expect(!QuotaRules.announcedResetMovesEnd(hour.end.addingTimeInterval(3_601), of: hour, now: now))
        #expect(!QuotaRules.announcedResetMovesEnd(Date(timeIntervalSince1970: 1e16), of: hour, now: now))
    }

    @Test("The ledger reads X-RateLimit-Reset: 9999999999999999 without trapping, and stores no such reset")
    func absurdAnnouncementThroughTheLedger() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("far.sqlite"))
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        var fields = HTTPFields()
        fields[HTTPField.Name("X-RateLimit-Remaining")!] = "10"
        fields[HTTPField.Name("X-RateLimit-Reset")!] = "9999999999999999"
        let announced = try #require(AnnouncedLimit.parse(fields, at: now).first)
        let outcome = try await store.recordQuotaAnnouncement(QuotaAnnouncement(
            bucket: "core", endpoint: "repos.get", configuredLimit: 100, window: .hour, remaining: announced.remaining,
            resetsAt: announced.resetsAt, at: now))
        #expect(!outcome.movedReset)
        #expect(outcome.period.end == QuotaWindow.hour.naturalPeriod(containing: now).end)
        let stored = try await store.read { db in try db.fetchValue(sql: "SELECT announced_reset_ms FROM quota_buckets").string }
        #expect(stored == nil)
    }

    @Test("An actual cost past any limit reads as the maximum, a negative one not at all")
    func hugeActualCosts() {
        let rule = QuotaConfiguration.ActualCost(bucket: "tokens", source: .jsonBody(path: ["usage", "total_tokens"]))
        func read(_ json: String) -> Int? { rule.read(from: HTTPFields(), body: Data(json.utf8)) }
        #expect(read(#"{"usage": {"total_tokens": 1000000000000}}"#) == QuotaLimits.maximumUnits)
        #expect(read(#"{"usage": {"total_tokens": 100000000000000000000000000000}}"#) == QuotaLimits.maximumUnits)
        #expect(read(#"{"usage": {"total_tokens": -5}}"#) == nil)
        #expect(read(#"{"usage": {"total_tokens": 12}}"#) == 12)
        let header = QuotaConfiguration.ActualCost(source: .header(HTTPField.Name("x-usage-tokens")!))
        var fields = HTTPFields()
        fields[HTTPField.Name("x-usage-tokens")!] = "99999999999999999999999"
        #expect(header.read(from: fields, body: nil) == QuotaLimits.maximumUnits)
    }

    @Test("A gzip, deflate or br body is decoded before its cost is read; a bomb past the limit is not decoded")
    func compressedBodies() throws {
        let json = Data(#"{"id": "x", "usage": {"total_tokens": 5000}}"#.utf8)
        let rule = QuotaConfiguration.ActualCost(bucket: "tokens", source: .jsonBody(path: ["usage", "total_tokens"]))
        for (coding, body) in [("gzip", try Compressed.gzip(json)), ("deflate", try Compressed.zlib(json)),
                               ("br", try #require(Data(base64Encoded: Compressed.brotliFixture)))] {
            var fields = HTTPFields()
            fields[.contentEncoding] = coding
            if coding == "br", !ContentDecoding.supportedCodings.contains("br") { continue }
            #expect(rule.read(from: fields, body: body) == 5000, "\(coding)")
            #expect(rule.read(from: HTTPFields(), body: body) == nil, "\(coding) undecoded is not JSON")
        }
        var gzip = HTTPFields()
        gzip[.contentEncoding] = "gzip"
        let bomb = try Compressed.gzip(Data(count: 2 * 1024 * 1024))
        #expect(ContentDecoding.decoded(bomb, fields: gzip, limit: 1024 * 1024) == nil)
        #expect(ContentDecoding.decoded(bomb, fields: gzip)?.count == 2 * 1024 * 1024)
        #expect(ContentDecoding.decoded(Data("not gzip".utf8), fields: gzip) == nil)
        var unknown = HTTPFields()
        unknown[.contentEncoding] = "zstd"
        #expect(ContentDecoding.decoded(json, fields: unknown) == nil)
    }
}

/// Compressed fixtures made by the system's own tools, so the decoder is tested against what
/// servers send, not against itself.
enum Compressed {
    /// `{"id": "x", "usage": {"total_tokens": 5000}}` compressed with brotli (libbrotlienc, quality 5).
    static let brotliFixture = "GysAAAQyPdLm+KEyqclkMp4s+XwvsopAA8lM4765h4hPiUSJGoj9OR7Rsj0D"

    static func gzip(_ data: Data) throws -> Data {
        try pipe(data, through: ["gzip", "-c", "-n"])
    }

    static func zlib(_ data: Data) throws -> Data {
        try pipe(data, through: ["python3", "-c", "import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))"])
    }

    private static func pipe(_ data: Data, through command: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let writer = Thread {
            input.fileHandleForWriting.write(data)
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let result = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return result
    }
}

/// Issue 36: refused requests make no permanent rows, so a client that makes up endpoint names
/// cannot grow the file with refusals.
@Suite("Refusals leave no rows behind")
struct RefusalRowTests {
    /// Never reached: every request here is refused before it is sent.
    struct UnreachableTransport: HTTPTransport {
        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            Issue.record("a refused request was sent")
            return (HTTPResponse(status: .ok), Data())
        }
    }

    @Test("requests refused for want of quota, on endpoints never seen, write no throttle, circuit or usage row")
    func quotaRefusalsWriteNoRows() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("refused.sqlite"))
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.quota = QuotaConfiguration(bucketLimits: ["empty": 0], defaultBucket: "empty")
        let gate = try Gate(store: store, transport: UnreachableTransport(), configuration: configuration,
                            clock: ManualClock(now: Date(timeIntervalSince1970: 1_795_000_000)))
        for index in 0..<5 {
            let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/made-up/\(index)")
            await #expect(throws: TollgateError.self) { try await gate.send(request, endpoint: "GET /made-up/\(index)") }
        }
        try await gate.flush()
        let counts = try await store.read { db in
            try ["throttle_limits", "circuits", "quota_usage"].map { table in
                try db.fetchValue(sql: "SELECT CAST(COUNT(*) AS TEXT) FROM \(table)").string ?? "?"
            }
        }
        #expect(counts == ["0", "0", "0"])
    }
}
