import Foundation
import Synchronization
import Testing
import Tollgate
import TollgateAsyncHTTPClient
import TollgateFakeAPI
import TollgateTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The URLSession drop-in over a gate whose transport streams: a task's delegate gets each chunk
/// as it arrives (`urlProtocol(_:didLoad:)` per chunk), not the whole body at its end. In the
/// drop-in's suite, which runs one test at a time: a session's gate is registered process-wide.
extension URLSessionDropInTests {
    /// Records when each chunk reached the task, and its end.
    final class Arrivals: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        // @unchecked Sendable: every field is behind the Mutex.
        private let state = Mutex<(chunks: [(Date, Data)], done: CheckedContinuation<Void, Never>?, finished: Bool)>(
            ([], nil, false))

        var chunks: [(Date, Data)] { state.withLock { $0.chunks } }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            state.withLock { $0.chunks.append((Date(), data)) }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.finished = true
                defer { state.done = nil }
                return state.done
            }
            waiting?.resume()
        }

        func finished() async {
            await withCheckedContinuation { continuation in
                let already = state.withLock { state -> Bool in
                    if state.finished { return true }
                    state.done = continuation
                    return false
                }
                if already { continuation.resume() }
            }
        }
    }

    @Test("streamed: server-sent events reach the task's delegate one by one, the first long before the origin's last")
    func eventsAsTheyArrive() async throws {
        let llm = try await FakeLLMAPI.start(behaviour: FakeLLMBehaviour(streamEventInterval: .milliseconds(200)))
        try await withStopping(llm, stop: { await $0.stop() }) { llm in
            let directory = try TemporaryDirectory()
            let store = try SQLiteStore(path: directory.path("ledger.sqlite"))
            let gate = try Gate(store: store, transport: AsyncHTTPClientTransport(timeout: .seconds(10)),
                                configuration: GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000),
                                clock: SystemClock())
            let arrivals = Arrivals()
            let session = URLSession(configuration: .tollgated(by: gate, naming: .methodAndPath, hosts: ["127.0.0.1"]),
                                     delegate: arrivals, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: llm.chatCompletionsURL)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(#"{"model":"fake-1","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}"#.utf8)
            session.dataTask(with: request).resume()
            await arrivals.finished()

            let chunks = arrivals.chunks
            let text = chunks.map { String(decoding: $0.1, as: UTF8.self) }.joined()
            #expect(text.hasSuffix("data: [DONE]\n\n"))
            #expect(chunks.count >= 4, "\(chunks.count) chunks")
            let finished = try #require(llm.streams.last?.finishedAt)
            let first = try #require(chunks.first?.0)
            #expect(finished.timeIntervalSince(first) > 0.6, "the first chunk came \(finished.timeIntervalSince(first)) s before the last event")
        }
    }
}
