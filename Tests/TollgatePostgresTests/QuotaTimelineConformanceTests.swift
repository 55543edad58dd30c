import Foundation
import Testing
import TollgateCore
import TollgateSQLite

/// The burn chart's timeline, written once and run against every available store.
@Suite("Quota timeline conformance")
struct QuotaTimelineConformanceTests {
    @Test("a day's steps add up to its usage per bucket, each step on the grid from the day's start",
          arguments: StoreBackend.available)
    func stepsAddUpToUsage(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let today = PacificDay(containing: Date())
            var charges: [QuotaCharge] = []
            for (bucket, cost) in [("youtube", 30), ("youtube", 12), ("youtube.search", 1)] {
                let outcome = try await store.reserveQuota(QuotaReservationRequest(
                    bucket: bucket, endpoint: bucket == "youtube" ? "videos.list" : "search.list", cost: cost,
                    configuredLimit: 100, at: Date()
                ))
                if case .reserved(let charge) = outcome { charges.append(charge) }
            }
            #expect(charges.count == 3)
            _ = try await store.refundQuota(reservationID: charges[1].reservationID, at: Date(), reason: "304 Not Modified")

            let steps = try await store.quotaTimeline(on: today, stepSeconds: 60)
            let usage = try await store.quotaUsage(on: today)
            for bucket in ["youtube", "youtube.search"] {
                let used = usage.filter { $0.bucket == bucket }.reduce(0) { $0 + $1.units }
                #expect(steps.filter { $0.bucket == bucket }.reduce(0) { $0 + $1.units } == used, "\(bucket)")
            }
            #expect(steps.filter { $0.bucket == "youtube" }.reduce(0) { $0 + $1.units } == 30)
            #expect(steps.map(\.bucket) == steps.map(\.bucket).sorted())
            for step in steps {
                let offset = step.start.timeIntervalSince(today.start)
                #expect(offset >= 0 && offset < today.nextReset.timeIntervalSince(today.start))
                #expect(offset.truncatingRemainder(dividingBy: 60) == 0, "\(offset)")
            }
            #expect(try await store.quotaTimeline(on: today.previous, stepSeconds: 60).isEmpty)
            await #expect(throws: StoreRefusal.self) { _ = try await store.quotaTimeline(on: today, stepSeconds: 0) }
        }
    }
}
