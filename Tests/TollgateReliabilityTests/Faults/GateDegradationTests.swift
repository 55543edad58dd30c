import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

@Suite("Faults: the request path degrades as designed")
struct GateDegradationTests {
    /// The file's page count right after the migrations, read before the capped store opens.
    static func pageCount(_ path: String) throws -> Int {
        try SQLiteStore(path: path).read { db in try db.fetchValue(sql: "PRAGMA page_count").int ?? 0 }
    }

    @Test("a cache write that fails on a full disk never fails the request: the network answer is returned")
    func cacheWriteFailsRequestSucceeds() async throws {
        var behaviour = FakeAPIBehaviour()
        behaviour.bodyPadding = 400_000  // far more than the file's room; the ledger rows still fit
        let fixture = try await GateFixture(
            behaviour: behaviour,
            storeConfiguration: { path in .init(maximumPageCount: try Self.pageCount(path) + 24) }
        )
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let answer = try await fixture.gate.send(fixture.video("v1"), endpoint: "videos.list")
            #expect(answer.source == .network)
            #expect(answer.status.code == 200)
            #expect(answer.body.count > 400_000)
            #expect(answer.unitsCharged == 1)
            // The store is tried just after the answer: wait for it (its own flush may fail on the full disk too).
            try? await fixture.gate.flush()
            #expect(try await fixture.store.cacheTotals().entries == 0, "nothing was stored")
            let warnings = fixture.logs.entries.filter { $0.level == .warning }
            #expect(warnings.contains { $0.message.description.contains("could not store the response in the cache")
                                         && "\($0.metadata)".contains("full") })
            // The charge was kept, and the file is sound.
            #expect(try await fixture.gate.quota.usage(on: PacificDay(containing: GateFixture.start)).map(\.units) == [1])
            #expect(try await fixture.store.quotaLedgerDiscrepancies().isEmpty)
            #expect(try StoreInvariants.integrity(fixture.store) == "ok")
        }
    }

    /// Sends distinct requests until the full file refuses an admission: the attempt that finds the
    /// ledger unwritable. Returns how many requests the server had heard before it, and the error.
    static func fillUntilAdmissionFails(_ fixture: GateFixture) async throws -> (heard: Int, error: any Error)? {
        for index in 0..<3_000 {
            let heard = fixture.api.receivedRequests.count
            do {
                _ = try await fixture.gate.send(fixture.video("fill-\(index)"), endpoint: "videos.list")
            } catch {
                if fixture.api.receivedRequests.count == heard { return (heard, error) }
            }
        }
        return nil
    }

    @Test("a ledger that cannot be written refuses the request by default: nothing is sent uncharged")
    func ledgerFailsClosed() async throws {
        let fixture = try await GateFixture(storeConfiguration: { path in
            .init(maximumPageCount: try Self.pageCount(path) + 2)
        })
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            #expect(fixture.gate.configuration.ledgerFailurePolicy == .failClosed)
            let (heard, error) = try #require(try await Self.fillUntilAdmissionFails(fixture), "the file never filled up")
            let storeError = try #require(error as? StoreError, "unexpected error \(error)")
            guard case .diskFull(_, let cause) = storeError else {
                Issue.record("unexpected error \(storeError)")
                return
            }
            #expect(cause.isFull)
            #expect(storeError.description.contains("is full"))
            // Refused again, and the server still hears nothing.
            await #expect(throws: StoreError.self) {
                try await fixture.gate.send(fixture.video("refused"), endpoint: "videos.list")
            }
            #expect(fixture.api.receivedRequests.count == heard)
            // Every request the server heard was charged; the ledger adds up.
            let usage = try await fixture.gate.quota.usage(on: PacificDay(containing: GateFixture.start))
            #expect(usage.map(\.units).reduce(0, +) == fixture.api.unitsUsed)
            #expect(try await fixture.store.quotaLedgerDiscrepancies().isEmpty)
            #expect(try StoreInvariants.integrity(fixture.store) == "ok")
        }
    }

    @Test("with the fail-open policy, a ledger that cannot be written lets the request out uncharged, with a warning")
    func ledgerFailsOpen() async throws {
        let fixture = try await GateFixture(
            storeConfiguration: { path in .init(maximumPageCount: try Self.pageCount(path) + 2) },
            configure: { $0.ledgerFailurePolicy = .failOpen }
        )
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            // Fill the file through a fail-closed gate on the same store, so we know it is full.
            let closed = try Gate(store: fixture.store, transport: AsyncHTTPClientTransportFactory.make(),
                                  configuration: GateFixture.configuration { _ in }, clock: fixture.clock)
            var full = false
            for index in 0..<3_000 where !full {
                let heard = fixture.api.receivedRequests.count
                do {
                    _ = try await closed.send(fixture.video("fill-\(index)"), endpoint: "videos.list")
                } catch StoreError.diskFull where fixture.api.receivedRequests.count == heard {
                    full = true
                } catch {}
            }
            try #require(full, "the file never filled up")
            let usageBefore = try await fixture.gate.quota.usage(on: PacificDay(containing: GateFixture.start))

            let heard = fixture.api.receivedRequests.count
            let answer = try await fixture.gate.send(fixture.video("open"), endpoint: "videos.list")
            #expect(answer.status.code == 200)
            #expect(answer.source == .network)
            #expect(answer.unitsCharged == 0, "sent uncharged")
            #expect(fixture.api.receivedRequests.count == heard + 1)
            #expect(fixture.logs.messages(at: .warning).contains { $0.contains("the ledger cannot be written") })
            #expect(try await fixture.gate.quota.usage(on: PacificDay(containing: GateFixture.start)) == usageBefore)
            #expect(try await fixture.store.quotaLedgerDiscrepancies().isEmpty)
            #expect(try StoreInvariants.integrity(fixture.store) == "ok")
        }
    }
}

import TollgateAsyncHTTPClient

enum AsyncHTTPClientTransportFactory {
    static func make() -> any HTTPTransport { AsyncHTTPClientTransport(timeout: .seconds(20)) }
}
