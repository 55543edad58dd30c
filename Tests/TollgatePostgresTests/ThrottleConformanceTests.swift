import Foundation
import Testing
import TollgateCore
import TollgateSQLite

/// The throttle's store operations, written once and run against every available store.
@Suite("Throttle store conformance")
struct ThrottleConformanceTests {
    @Test("admits up to the limit in the window, refuses the next with the time until room, and admits after it",
          arguments: StoreBackend.available)
    func slidingWindow(backend: StoreBackend) async throws {
        let time = ConformanceTime()
        // Long enough that a loaded machine reads the window before the first admission leaves it.
        let limit = ThrottleLimit(requests: 3, per: .seconds(4))
        try await backend.withStore(time: time) { store in
            for expected in 1...3 {
                let admission = try await store.admitRequest(endpoint: "e", limit: limit, at: time.now())
                #expect(admission.allowed)
                #expect(admission.count == expected)
            }
            let refused = try await store.admitRequest(endpoint: "e", limit: limit, at: time.now())
            #expect(!refused.allowed)
            #expect(refused.count == 3)
            let wait = try #require(refused.retryAfter)
            #expect(wait > 0 && wait <= 4)
            let window = try await store.throttleWindow(endpoint: "e", limit: limit, at: time.now())
            #expect(window.count == 3)
            #expect(window.remaining == 0)
            try await time.pass(.milliseconds(4_100))
            #expect(try await store.admitRequest(endpoint: "e", limit: limit, at: time.now()).allowed)
            // Other endpoints have windows of their own.
            #expect(try await store.admitRequest(endpoint: "other", limit: limit, at: time.now()).allowed)
        }
    }

    @Test("many tasks on several stores admitted at once never exceed the limit", arguments: StoreBackend.available)
    func sharedWindow(backend: StoreBackend) async throws {
        let limit = ThrottleLimit(requests: 10, per: .seconds(30))
        try await backend.withStores(count: 4) { stores in
            let admitted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    let store = stores[index % stores.count]
                    group.addTask { try await store.admitRequest(endpoint: "e", limit: limit, at: Date()).allowed }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(admitted == 10)
            #expect(try await stores[3].throttleWindow(endpoint: "e", limit: limit, at: Date()).count == 10)
        }
    }

    @Test("reset forgets one endpoint's requests or all, and an invalid limit is refused", arguments: StoreBackend.available)
    func resetAndInvalidLimit(backend: StoreBackend) async throws {
        let limit = ThrottleLimit(requests: 1, per: .seconds(30))
        try await backend.withStore { store in
            _ = try await store.admitRequest(endpoint: "a", limit: limit, at: Date())
            _ = try await store.admitRequest(endpoint: "b", limit: limit, at: Date())
            #expect(!(try await store.admitRequest(endpoint: "a", limit: limit, at: Date()).allowed))
            #expect(try await store.resetThrottle(endpoint: "a", at: Date()) == 1)
            #expect(try await store.admitRequest(endpoint: "a", limit: limit, at: Date()).allowed)
            #expect(try await store.resetThrottle(endpoint: nil, at: Date()) == 2)
            await #expect(throws: StoreRefusal.self) {
                try await store.admitRequest(endpoint: "a", limit: ThrottleLimit(requests: -1, per: .seconds(1)), at: Date())
            }
        }
    }
}
