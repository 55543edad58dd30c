import Foundation
import Tollgate

/// `circuit-probe PATH ENDPOINT NOW_MS ATTEMPTS [READY_PATH GO_PATH]`: asks the endpoint's circuit
/// for admission ATTEMPTS times at the wall-clock time NOW_MS (a stopped clock), and prints one
/// word per answer: `probe:<token>`, `allowed` or `refused`.
///
/// With READY_PATH and GO_PATH, the worker creates READY_PATH once its store is open and waits for
/// GO_PATH to appear before asking, so the test can release every process at the same moment.
enum CircuitProbeJob {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 4 || arguments.count == 6, let nowMilliseconds = Int64(arguments[2]),
              let attempts = Int(arguments[3])
        else { throw StoreRefusal.invalidArgument("circuit-probe PATH ENDPOINT NOW_MS ATTEMPTS [READY_PATH GO_PATH]") }
        let store = try SQLiteStore(path: arguments[0])
        let clock = ManualClock(now: Date(timeIntervalSince1970: TimeInterval(nowMilliseconds) / 1000))
        let breaker = CircuitBreaker(storage: store, clock: clock)
        if arguments.count == 6 {
            try Data().write(to: URL(fileURLWithPath: arguments[4]))
            let deadline = Date().addingTimeInterval(30)
            while !FileManager.default.fileExists(atPath: arguments[5]) {
                guard Date() < deadline else { throw StoreRefusal.invalidArgument("no go signal at \(arguments[5])") }
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        var answers: [String] = []
        for _ in 0..<attempts {
            switch try await breaker.shouldAllowRequest(endpoint: arguments[1]) {
            case .allowed: answers.append("allowed")
            case .probe(let probe): answers.append("probe:\(probe.token)")
            case .refused: answers.append("refused")
            }
        }
        print(answers.joined(separator: " "))
    }
}
