import Foundation
import HTTPTypes
import InMemoryLogging
import Logging
import Tollgate
import TollgateTestSupport

/// A cache over a real SQLite file in a temporary directory, driven by a manual clock.
final class CacheFixture {
    let directory: TemporaryDirectory
    let path: String
    let clock: ManualClock
    let logs = InMemoryLogHandler()
    var store: SQLiteStore
    var cache: ETagCache
    let configuration: CacheConfiguration

    /// 2026-11-26 10:00 Pacific (18:00 UTC): the middle of a Pacific day.
    static let start = Date(timeIntervalSince1970: 1_795_716_000)

    init(configuration: CacheConfiguration = CacheConfiguration(), start: Date = CacheFixture.start) throws {
        directory = try TemporaryDirectory()
        path = directory.path("cache.sqlite")
        clock = ManualClock(now: start)
        self.configuration = configuration
        var logHandler = logs
        logHandler.logLevel = .trace
        let logger = Logger(label: "cache-tests") { _ in logHandler }
        store = try SQLiteStore(path: path, logger: logger)
        cache = try ETagCache(storage: store, configuration: configuration, clock: clock, logger: logger)
    }

    /// Closes the store and the cache and opens the file again, as a new process would.
    func reopen() throws {
        store = try SQLiteStore(path: path)
        cache = try ETagCache(storage: store, configuration: configuration, clock: clock)
    }

    var today: PacificDay { PacificDay(containing: clock.now()) }

    /// Rows of a query on the file, read through the store.
    func query(_ sql: String) throws -> [Row] {
        try store.read { db in try db.fetchAll(sql: sql) }
    }

    func count(_ table: String) throws -> Int {
        try store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM \(table)").int ?? -1 }
    }
}

/// A request for an absolute URL such as `https://api.example.com/videos?id=1`.
func request(
    _ url: String, method: HTTPRequest.Method = .get, headers: [(String, String)] = []
) -> HTTPRequest {
    let components = URLComponents(string: url)!
    var authority = components.host ?? ""
    if let port = components.port { authority += ":\(port)" }
    var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
    if let query = components.percentEncodedQuery { path += "?" + query }
    var fields = HTTPFields()
    for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    return HTTPRequest(method: method, scheme: components.scheme, authority: authority, path: path, headerFields: fields)
}

/// A response with header fields given as pairs.
func response(_ status: Int = 200, _ headers: [(String, String)] = []) -> HTTPResponse {
    var fields = HTTPFields()
    for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    return HTTPResponse(status: HTTPResponse.Status(code: status), headerFields: fields)
}

extension CacheLookup {
    var isFresh: Bool { if case .fresh = self { true } else { false } }
    var isMiss: Bool { if case .miss = self { true } else { false } }
    var conditionalRequest: HTTPRequest? {
        if case .revalidate(_, let conditional) = self { conditional } else { nil }
    }
}

extension Data {
    /// Whether `needle`'s bytes appear anywhere in this data.
    func containsBytes(of needle: String) -> Bool {
        range(of: Data(needle.utf8)) != nil
    }
}
