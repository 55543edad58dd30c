import Foundation
import HTTPTypes
import Tollgate

/// `quiet-app PATH`: an app as most are written, bootstrapping no logging: it opens a new store
/// (every migration applied), sends through a gate whose throttle admits one request an hour, is
/// throttled twice and served from the cache once. Prints `answered A throttled T`; anything on
/// standard error is a library line an app did not ask for.
enum QuietAppJob {
    /// Answers every request 200 with a body and an entity tag.
    struct AnsweringTransport: HTTPTransport {
        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            var fields = HTTPFields()
            fields[.eTag] = "\"1\""
            fields[.cacheControl] = "max-age=60"
            return (HTTPResponse(status: .ok, headerFields: fields), Data("{}".utf8))
        }
    }

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 1 else { throw StoreRefusal.invalidArgument("quiet-app PATH") }
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: 1, per: .seconds(3600)))
        configuration.maximumThrottleWait = .zero
        let gate = try Gate(store: try SQLiteStore(path: arguments[0]), transport: AnsweringTransport(),
                            configuration: configuration)
        var answered = 0
        var throttled = 0
        for id in ["a", "a", "b", "c"] {
            let request = HTTPRequest(method: .get, scheme: "https", authority: "www.googleapis.com",
                                      path: "/youtube/v3/videos?id=\(id)&part=snippet")
            do {
                _ = try await gate.send(request, endpoint: "videos.list")
                answered += 1
            } catch TollgateError.throttled {
                throttled += 1
            }
        }
        try await gate.flush()
        print("answered \(answered) throttled \(throttled)")
    }
}
