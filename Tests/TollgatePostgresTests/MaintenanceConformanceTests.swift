import Foundation
import Testing
import TollgateCore
import TollgateSQLite

/// The maintenance operations, written once and run against every available store.
@Suite("Maintenance store conformance")
struct MaintenanceConformanceTests {
    @Test("vacuum and throttle resets are on record in admin_events, newest first, filtered by subject",
          arguments: StoreBackend.available)
    func adminEventsRecordMaintenance(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.admitRequest(endpoint: "e", limit: ThrottleLimit(requests: 5, per: .seconds(60)), at: Date())
            try await store.resetThrottle(endpoint: "e", at: Date())
            let result = try await store.vacuum(at: Date())
            #expect(result.bytesBefore > 0)
            #expect(result.bytesAfter > 0)
            let all = try await store.adminEvents(subject: nil, limit: 10)
            #expect(all.map(\.subject) == ["database", "throttle"])
            #expect(all.map(\.action) == ["vacuum", "reset"])
            #expect(all[1].target == "e")
            #expect(all[0].id > all[1].id)
            let throttle = try await store.adminEvents(subject: "throttle", limit: 10)
            #expect(throttle.map(\.action) == ["reset"])
            #expect(try await store.adminEvents(subject: nil, limit: 1).count == 1)
        }
    }
}
