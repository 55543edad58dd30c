import Foundation
import HTTPTypes
import Tollgate

/// `gate-coalesce PATH URL TASKS START_AT_MS`: waits until the wall clock reaches `START_AT_MS`,
/// then sends `TASKS` identical GETs at once through one gate on the file (system clock, no
/// throttle), and prints `network N coalesced N cache N other N`.
enum GateCoalesceJob {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 4, let url = URL(string: arguments[1]), let tasks = Int(arguments[2]),
              let startAtMs = Int64(arguments[3])
        else {
            throw StoreRefusal.invalidArgument("gate-coalesce PATH URL TASKS START_AT_MS")
        }
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: 100_000, per: .seconds(60)))
        let gate = try Gate(store: try SQLiteStore(path: arguments[0]), transport: URLSessionTransport(timeout: .seconds(20)),
                            configuration: configuration)
        let wait = Double(startAtMs) / 1000 - Date().timeIntervalSince1970
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
        let sources = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<tasks {
                group.addTask { try await gate.send(HTTPRequest(url: url), endpoint: "videos.list").source.description }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        try await gate.flush()
        let count = { (name: String) in sources.filter { $0 == name }.count }
        let other = sources.count - count("network") - count("coalesced") - count("cache")
        print("network \(count("network")) coalesced \(count("coalesced")) cache \(count("cache")) other \(other)")
    }
}
