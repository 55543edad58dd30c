import Foundation
import Testing
// @testable for PostgresStore's window clock, the test-only stand-in for the database's now.
@testable import TollgatePostgres
import TollgateCore
import TollgateSQLite
import TollgateTestSupport

@Suite("PostgreSQL store", .enabled(if: PostgresTestDatabase.isConfigured, "TOLLGATE_POSTGRES_URL is not set"))
struct PostgresStoreTests {
    @Test("opening a fresh database applies and records every migration once; reopening applies none")
    func migratesOnce() async throws {
        try await PostgresTestDatabase.with { database in
            for _ in 0..<2 {
                let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
                await store.shutdown()
            }
            #expect(try await database.intValue("SELECT count(*)::bigint FROM schema_migrations") == PostgresMigrations.all.count)
            #expect(try await database.textValue("SELECT checksum FROM schema_migrations WHERE version = 1")
                == PostgresMigrations.all[0].checksum)
        }
    }

    @Test("a store that may not migrate refuses a database that needs it and writes nothing; the status lists what is pending")
    func lookingDoesNotMigrate() async throws {
        try await PostgresTestDatabase.with { database in
            let looking = PostgresStore.Configuration(migratesOnOpen: false)
            let pending = try await PostgresStore.migrationStatus(url: database.url, logger: PostgresTestDatabase.quietLogger)
            #expect(pending.map(\.migration) == PostgresMigrations.all && pending.allSatisfy { !$0.isApplied })
            await #expect(throws: StoreRefusal.migrationsPending(
                path: "\(try PostgresLocation(url: database.url))", databaseVersion: 0, libraryVersion: PostgresMigrations.all.count
            )) {
                _ = try await PostgresStore(url: database.url, configuration: looking, logger: PostgresTestDatabase.quietLogger)
            }
            #expect(try await database.textValue("SELECT to_regclass('schema_migrations')::text") == nil)

            let writer = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            #expect(writer.migrationsAppliedAtOpen == PostgresMigrations.all)
            await writer.shutdown()
            let reader = try await PostgresStore(url: database.url, configuration: looking, logger: PostgresTestDatabase.quietLogger)
            #expect(reader.migrationsAppliedAtOpen.isEmpty)
            await reader.shutdown()
            let applied = try await PostgresStore.migrationStatus(url: database.url, logger: PostgresTestDatabase.quietLogger)
            #expect(applied.allSatisfy { $0.isApplied })
        }
    }

    @Test("a fleet's database at version 5 keeps its cache entries when migration 6 puts each key's URL in front")
    func cacheKeysSurviveMigrationSix() async throws {
        try await PostgresTestDatabase.with { database in
            let versionFive = PostgresStore.Configuration(migrations: Array(PostgresMigrations.all.prefix(5)))
            let old = try await PostgresStore(url: database.url, configuration: versionFive, logger: PostgresTestDatabase.quietLogger)
            // Keys as version 5's library made them: the digest alone; and a lease naming one.
            let url = "https://www.googleapis.com/youtube/v3/videos?id=v1&key=REDACTED&part=snippet"
            let digest = String(repeating: "ab", count: 32)
            _ = try await old.storeCacheEntry(
                NewCacheEntry(resourceKey: digest, variantKey: "", endpoint: "videos.list", method: "GET", url: url, vary: nil,
                              status: 200, headers: [CacheHeaderField(name: "ETag", value: "\"v1\"")], etag: "\"v1\"",
                              lastModified: nil, freshUntilMs: nil, nowMs: 1_000, body: Data("stored".utf8)),
                retention: CacheRetention(maxEntries: 10, maxTotalBodyBytes: 1 << 20, expiredBeforeMs: 0),
                activity: CacheActivity()
            )
            try await database.execute("INSERT INTO cache_leases VALUES ('\(digest)', 'old', 0, 60000)")
            await old.shutdown()

            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            #expect(store.migrationsAppliedAtOpen.map(\.version) == Array(6...PostgresMigrations.all.count))
            let key = CacheResourceKey.make(url: url, digest: digest)
            let entry = try await store.cachedEntry(resourceKey: key, validatedSinceMs: 0) { $0.first?.id }
            #expect(entry.map { String(decoding: $0.body, as: UTF8.self) } == "stored", "found under the new spelling")
            #expect(try await store.cachedEntry(resourceKey: digest, validatedSinceMs: 0) { $0.first?.id } == nil)
            #expect(try await database.intValue("SELECT COUNT(*) FROM cache_leases") == 0)
            #expect(try await store.invalidateCacheEntries(url: url, activity: CacheActivity()) == 1)
            await store.shutdown()
        }
    }

    @Test("a fleet's database at version 2 keeps its throttle windows when migration 3 moves them into each endpoint's row")
    func throttleWindowsSurviveMigrationThree() async throws {
        try await PostgresTestDatabase.with { database in
            let versionTwo = PostgresStore.Configuration(migrations: Array(PostgresMigrations.all.prefix(2)))
            let old = try await PostgresStore(url: database.url, configuration: versionTwo, logger: PostgresTestDatabase.quietLogger)
            await old.shutdown()
            // What version 2's admissions leave: limits rows and one row per admitted request.
            try await database.execute("""
                INSERT INTO throttle_limits (endpoint, request_limit, window_ms, updated_at_ms)
                VALUES ('videos.list', 3, 600000, 0), ('search.list', 10, 600000, 0)
                """)
            try await database.execute("""
                INSERT INTO throttle_requests (endpoint, at_ms)
                SELECT 'videos.list', tollgate_ms(now()) - n * 1000 FROM generate_series(1, 3) AS n
                UNION ALL SELECT 'search.list', tollgate_ms(now()) - 1000
                """)
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            #expect(store.migrationsAppliedAtOpen.map(\.version) == Array(3...PostgresMigrations.all.count))
            let limit = ThrottleLimit(requests: 3, per: .seconds(600))
            let full = try await store.admitRequest(endpoint: "videos.list", limit: limit, at: Date())
            #expect(!full.allowed && full.count == 3, "the three requests recorded before the upgrade still fill the window")
            #expect(try await store.throttleWindow(endpoint: "search.list", limit: ThrottleLimit(requests: 10, per: .seconds(600)), at: Date()).count == 1)
            await store.shutdown()
            #expect(try await database.intValue("SELECT current_count FROM throttle_status WHERE endpoint = 'videos.list'") == 3)
            #expect(try await database.textValue("SELECT to_regclass('throttle_requests')::text") == nil)
        }
    }

    @Test("several machines opening one new database at once migrate it exactly once")
    func concurrentMigrators() async throws {
        try await PostgresTestDatabase.with { database in
            let url = database.url
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        let store = try await PostgresStore(url: url, logger: PostgresTestDatabase.quietLogger)
                        await store.shutdown()
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await database.intValue("SELECT count(*)::bigint FROM schema_migrations") == PostgresMigrations.all.count)
        }
    }

    @Test("a database whose history is newer than the library is refused, naming both versions, and nothing is written")
    func refusesNewerDatabase() async throws {
        try await PostgresTestDatabase.with { database in
            try await database.execute("""
                CREATE TABLE schema_migrations (version bigint PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                                                applied_at timestamptz NOT NULL DEFAULT now())
                """)
            try await database.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES (7, 'future', 'x')")
            await #expect(throws: StoreRefusal.databaseIsNewer(databaseVersion: 7, libraryVersion: PostgresMigrations.all.count)) {
                _ = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            }
            #expect(try await database.textValue("SELECT to_regclass('quota_buckets')::text") == nil)
            #expect(try await database.intValue("SELECT count(*)::bigint FROM schema_migrations") == 1)
            let error = StoreRefusal.databaseIsNewer(databaseVersion: 7, libraryVersion: 1)
            #expect(error.description.contains("version 7") && error.description.contains("version 1"))
        }
    }

    @Test("a database migrated from a different script is refused with both checksums, and nothing is written")
    func refusesDifferentHistory() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            await store.shutdown()
            try await database.execute("UPDATE schema_migrations SET checksum = 'deadbeef' WHERE version = 1")
            let library = PostgresMigrations.all[0]
            await #expect(throws: StoreRefusal.migrationChecksumMismatch(
                version: 1, name: library.name, recorded: "deadbeef", expected: library.checksum
            )) {
                _ = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            }
            // A library with a migration 2 does not apply it over a history it does not recognise.
            let next = Migration(version: 2, name: "next", sql: "CREATE TABLE should_not_exist (id integer)")
            await #expect(throws: StoreRefusal.self) {
                _ = try await PostgresStore(
                    url: database.url, configuration: .init(migrations: PostgresMigrations.all + [next]),
                    logger: PostgresTestDatabase.quietLogger
                )
            }
            #expect(try await database.textValue("SELECT to_regclass('should_not_exist')::text") == nil)
        }
    }

    @Test("a database that does not exist is reported as unreachable, naming the server and what to check")
    func missingDatabase() async throws {
        var location = try PostgresLocation(url: try #require(PostgresTestDatabase.serverURL))
        location.database = "tollgate_no_such_database"
        let error = await #expect(throws: PostgresStoreError.self) {
            _ = try await PostgresStore(location: location, logger: PostgresTestDatabase.quietLogger)
        }
        guard case .unreachable(let server, let reason)? = error else {
            Issue.record("not unreachable: \(String(describing: error))")
            return
        }
        #expect(server == "\(location)")
        #expect(reason.contains("does not exist"), "\(reason)")
        #expect(error?.description.contains("Check that the server is running") == true, "\(String(describing: error))")
    }

    @Test("when the database goes away after opening, operations fail within the connection wait, naming the server")
    func serverGoneAfterOpening() async throws {
        let database = try await PostgresTestDatabase.create()
        let store = try await PostgresStore(
            url: database.url, configuration: .init(connectTimeout: .seconds(5), connectionWait: .seconds(2)),
            logger: PostgresTestDatabase.quietLogger
        )
        let request = QuotaReservationRequest(bucket: "b", endpoint: "e.list", cost: 1, configuredLimit: 10, at: Date())
        _ = try await store.reserveQuota(request)
        try await database.drop()
        let started = ContinuousClock.now
        let error = await #expect(throws: PostgresStoreError.self) {
            _ = try await store.reserveQuota(request)
        }
        #expect(error?.isStorageFailure == true, "\(String(describing: error))")
        #expect(error?.description.contains(database.location.description) == true, "\(String(describing: error))")
        // Far below the pool's own minute.
        #expect(ContinuousClock.now - started < .seconds(20))
        await store.shutdown()
    }

    @Test("connections killed mid-reservation lose no returned charge, fail with typed errors, and leave the ledger sound")
    func connectionsKilledMidRun() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(
                url: database.url, configuration: .init(maximumConnections: 6, connectionWait: .seconds(5)),
                logger: PostgresTestDatabase.quietLogger
            )
            let killing = Task {
                for _ in 0..<15 {
                    try? await Task.sleep(for: .milliseconds(60))
                    try? await database.execute("""
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE datname = current_database() AND pid <> pg_backend_pid()
                        """)
                }
            }
            let outcomes = await withTaskGroup(of: (charged: Int, failed: Int, untyped: Int).self) { group in
                for worker in 0..<6 {
                    group.addTask {
                        var tally = (charged: 0, failed: 0, untyped: 0)
                        for _ in 0..<40 {
                            let request = QuotaReservationRequest(
                                bucket: "b", endpoint: "e\(worker).list", cost: 1, configuredLimit: 1_000_000, at: Date()
                            )
                            do {
                                if case .reserved = try await store.reserveQuota(request) { tally.charged += 1 }
                            } catch let error as PostgresStoreError where error.isStorageFailure {
                                tally.failed += 1
                            } catch {
                                tally.untyped += 1
                            }
                        }
                        return tally
                    }
                }
                return await group.reduce(into: (charged: 0, failed: 0, untyped: 0)) {
                    $0.charged += $1.charged
                    $0.failed += $1.failed
                    $0.untyped += $1.untyped
                }
            }
            await killing.value
            #expect(outcomes.untyped == 0)
            // A reservation whose connection broke after COMMIT was sent may have been charged.
            let used = try await store.quotaBucketStatus(bucket: "b", configuredLimit: 1_000_000, at: Date()).unitsUsed
            #expect(used >= outcomes.charged)
            #expect(used <= outcomes.charged + outcomes.failed)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            await store.shutdown()
        }
    }

    @Test("the Pacific day charged is the database's, whatever time the caller's clock says")
    func databaseClockDecidesTheDay() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            let skewed = Date().addingTimeInterval(-400 * 86_400)
            let request = QuotaReservationRequest(bucket: "b", endpoint: "e.list", cost: 1, configuredLimit: 10, at: skewed)
            let outcome = try await store.reserveQuota(request)
            await store.shutdown()
            guard case .reserved(let charge) = outcome else {
                Issue.record("refused")
                return
            }
            let databaseDay = try await database.textValue("SELECT pacific_date FROM pacific_clock")
            #expect(charge.day.key == databaseDay)
            #expect(charge.day != PacificDay(containing: skewed))
        }
    }

    @Test("the hour an hourly bucket charges is the database's, whatever time the caller's clock says")
    func databaseClockDecidesTheWindow() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            let hour = #"SELECT to_char(date_trunc('hour', now() AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:00:00"Z"')"#
            let before = try await database.textValue(hour)
            let skewed = Date().addingTimeInterval(-5 * 3600)
            let outcome = try await store.reserveQuota(QuotaReservationRequest(
                bucket: "b", endpoint: "e.list", cost: 1, configuredLimit: 10, at: skewed, window: .hour
            ))
            let after = try await database.textValue(hour)
            let status = try await store.quotaBucketStatus(bucket: "b", configuredLimit: 10, window: .hour, at: skewed)
            await store.shutdown()
            guard case .reserved(let charge) = outcome else {
                Issue.record("refused")
                return
            }
            #expect([before, after].contains(charge.period.key))
            #expect(charge.period.key != QuotaWindow.instantKey(QuotaWindow.hour.naturalPeriod(containing: skewed).start))
            // Read a moment later: the hour may have turned since.
            #expect(status.unitsUsed == 1 || status.period.key != charge.period.key)
            #expect(try await database.textValue("SELECT window_start FROM quota_windows") == charge.period.key)
            #expect(try await database.intValue("SELECT units - is_current FROM quota_windows") == 0,
                    "one unit while the hour lasts, none after")
            // quota_today shows the buckets counted by the Pacific day only.
            #expect(try await database.intValue("SELECT count(*)::bigint FROM quota_today") == 0)
        }
    }

    @Test("charges of a rolling window wait for the bucket's row lock: those that read the window before another's charge committed do not all charge it")
    func windowedChargesTakeTheBucketLock() async throws {
        try await PostgresTestDatabase.with { database in
            // Slices of a second: the charges below go under a key of their own, whose day row holds
            // 10 of the 2,000; only the window's sum says 10 are left.
            let window = QuotaWindow.rolling(seconds: 60)
            let clock = ManualClock(now: Date(timeIntervalSince1970: 1_795_775_400))
            let store = try await PostgresStore(
                location: PostgresLocation(url: database.url), configuration: .init(maximumConnections: 8),
                logger: PostgresTestDatabase.quietLogger, windowClock: clock
            )
            func reserve(_ cost: Int) async throws -> QuotaReservationOutcome {
                try await store.reserveQuota(QuotaReservationRequest(
                    bucket: "shared", endpoint: "e.list", cost: cost, configuredLimit: 2_000, at: clock.now(), window: window
                ))
            }
            do {
                _ = try #require(try await reserve(1_980).charge)
                clock.advance(by: .seconds(1))
                let last = try #require(try await reserve(10).charge)
                // Another session holds that key's day row: every charge that gets past its check waits
                // there, so without the bucket's lock all of them would have read 1,990 used first.
                let pending = try await database.whileHolding("""
                    SELECT units FROM quota_bucket_days WHERE pacific_date = '\(last.period.key)' FOR UPDATE
                    """) { () -> Task<[QuotaCharge], any Error> in
                    let charges = Task {
                        try await withThrowingTaskGroup(of: QuotaCharge?.self) { group in
                            for _ in 0..<8 { group.addTask { try await reserve(10).charge } }
                            return try await group.reduce(into: [QuotaCharge]()) { if let charge = $1 { $0.append(charge) } }
                        }
                    }
                    // Until several sessions wait on a lock (or ten seconds pass).
                    let deadline = ContinuousClock.now + .seconds(10)
                    while ContinuousClock.now < deadline, try await database.intValue("""
                        SELECT count(*)::bigint FROM pg_stat_activity
                        WHERE datname = current_database() AND wait_event_type = 'Lock'
                        """) ?? 0 < 4 {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    return charges
                }
                let charged = try await pending.value
                #expect(charged.count == 1, "10 units were left: one charge of 10")
                #expect(try await store.quotaBucketStatus(bucket: "shared", configuredLimit: 2_000, window: window,
                                                          at: clock.now()).unitsUsed == 2_000)
                #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            } catch {
                await store.shutdown()
                throw error
            }
            await store.shutdown()
        }
    }

    @Test("a settlement past the limit raises the day row's ceiling with it, so the CHECK holds and still refuses the next charge")
    func settlementRaisesTheCeiling() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            let request = QuotaReservationRequest(bucket: "b", endpoint: "e.list", cost: 10, configuredLimit: 10, at: Date())
            guard case .reserved(let charge) = try await store.reserveQuota(request) else {
                Issue.record("refused")
                await store.shutdown()
                return
            }
            let settled = try await store.settleQuotaCost(reservationID: charge.reservationID, bucket: "b", actualUnits: 25,
                                                          at: Date(), detail: nil)
            let next = try await store.reserveQuota(QuotaReservationRequest(bucket: "b", endpoint: "e.list", cost: 1,
                                                                            configuredLimit: 10, at: Date()))
            let discrepancies = try await store.quotaLedgerDiscrepancies()
            await store.shutdown()
            #expect(settled == .settled(difference: 15, actualUnits: 25, overLimit: true))
            #expect(try await database.intValue("SELECT units FROM quota_bucket_days") == 25)
            #expect(try await database.intValue("SELECT ceiling FROM quota_bucket_days") == 25)
            guard case .refused(let refusal) = next else {
                Issue.record("charged over a window past its limit")
                return
            }
            #expect(refusal.bucketUnitsUsed == 25)
            #expect(discrepancies.isEmpty)
            await #expect(throws: (any Error).self) {
                try await database.execute("UPDATE quota_bucket_days SET units = ceiling + 1")
            }
        }
    }

    @Test("the schema itself refuses a bucket day over its ceiling and a second refund of one charge")
    func schemaBackstops() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            let request = QuotaReservationRequest(bucket: "b", endpoint: "e.list", cost: 10, configuredLimit: 10, at: Date())
            guard case .reserved(let charge) = try await store.reserveQuota(request) else {
                Issue.record("refused")
                await store.shutdown()
                return
            }
            _ = try await store.refundQuota(reservationID: charge.reservationID, at: Date(), reason: nil)
            await store.shutdown()
            await #expect(throws: (any Error).self) {
                try await database.execute("UPDATE quota_bucket_days SET units = ceiling + 1")
            }
            await #expect(throws: (any Error).self) {
                try await database.execute("""
                    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id)
                    VALUES (0, '\(charge.day.key)', 'b', 'e.list', 'refund', -10, \(charge.reservationID))
                    """)
            }
        }
    }

    @Test("a response stored later by another machine is never overwritten by an older one")
    func olderResponseNeverWins() async throws {
        try await PostgresTestDatabase.withStore { store in
            let roomy = CacheRetention(maxEntries: 100, maxTotalBodyBytes: 1 << 20, expiredBeforeMs: 0)
            func entry(_ body: String, at nowMs: Int64) -> NewCacheEntry {
                NewCacheEntry(
                    resourceKey: "r", variantKey: "", endpoint: "videos.list", method: "GET", url: "https://x/r", vary: nil,
                    status: 200, headers: [], etag: nil, lastModified: nil, freshUntilMs: nil, nowMs: nowMs,
                    body: Data(body.utf8)
                )
            }
            _ = try await store.storeCacheEntry(entry("newer", at: 2_000), retention: roomy, activity: CacheActivity())
            let late = try await store.storeCacheEntry(entry("older", at: 1_000), retention: roomy, activity: CacheActivity())
            #expect(late.entry.storedAtMs == 2_000)
            #expect(!late.replaced)
            let read = try await store.cachedEntry(resourceKey: "r", validatedSinceMs: 0) { $0.first?.id }
            #expect(read?.body == Data("newer".utf8))
        }
    }

    @Test("a circuit's state change is NOTIFY-ed to every listening process at commit")
    func circuitChangesAreNotified() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            let payload = try await database.firstNotification(on: "tollgate_circuits") {
                _ = try await store.forceOpenCircuit(endpoint: "videos.list", duration: .seconds(60), policy: CircuitPolicy(), at: Date())
            }
            await store.shutdown()
            #expect(payload == "videos.list open")
        }
    }

    @Test("a machine watching circuit changes hears another machine's within a second, in commit order, until it stops")
    func watchesCircuitChanges() async throws {
        try await PostgresTestDatabase.with { database in
            let watcher = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            let other = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            let (changes, heard) = AsyncStream.makeStream(of: (CircuitChange, ContinuousClock.Instant).self)
            let watching = Task {
                defer { heard.finish() }
                try await watcher.watchCircuitChanges { heard.yield(($0, .now)) }
            }
            // The LISTEN is in place once the watcher's session has run it.
            let deadline = ContinuousClock.now + .seconds(10)
            var listening = false
            while !listening, ContinuousClock.now < deadline {
                listening = try await database.intValue("""
                    SELECT count(*)::bigint FROM pg_stat_activity
                    WHERE datname = current_database() AND query LIKE 'LISTEN %tollgate_circuits%'
                    """) != 0
                if !listening { try await Task.sleep(for: .milliseconds(20)) }
            }
            try #require(listening, "the watcher's LISTEN never showed in pg_stat_activity")

            _ = try await other.forceOpenCircuit(endpoint: "videos list", duration: .seconds(60), policy: CircuitPolicy(), at: Date())
            // Delivered at commit: by the time the opening machine hears back, or within a second of it.
            let committed = ContinuousClock.now
            _ = try await other.resetCircuits(endpoint: "videos list", at: Date())
            // Two changes, or whatever came within ten seconds: a lost notification fails, never hangs.
            let received = await withTaskGroup(of: [(CircuitChange, ContinuousClock.Instant)]?.self) { group in
                group.addTask {
                    var received: [(CircuitChange, ContinuousClock.Instant)] = []
                    for await change in changes {
                        received.append(change)
                        if received.count == 2 { break }
                    }
                    return received
                }
                group.addTask { try? await Task.sleep(for: .seconds(10)); return nil }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first ?? []
            }
            #expect(received.map(\.0) == [
                CircuitChange(endpoint: "videos list", state: .open), CircuitChange(endpoint: "videos list", state: .closed),
            ])
            #expect(try #require(received.first).1 - committed < .seconds(1))

            watching.cancel()
            let stopped = await withTaskGroup(of: Bool.self) { group in
                group.addTask { _ = await watching.result; return true }
                group.addTask { try? await Task.sleep(for: .seconds(10)); return false }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            #expect(stopped, "cancelling the watching task ends the watch")
            await watcher.shutdown()
            await other.shutdown()
        }
    }

    @Test("psql users read the same views as sqlite3 users: quota_today shows today's charges")
    func viewsShowTheLedger() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            let request = QuotaReservationRequest(bucket: "b", endpoint: "e.list", cost: 7, configuredLimit: 10, at: Date())
            _ = try await store.reserveQuota(request)
            await store.shutdown()
            #expect(try await database.intValue("SELECT units FROM quota_today WHERE endpoint = 'e.list'") == 7)
            #expect(try await database.intValue("SELECT bucket_remaining FROM quota_today WHERE bucket = 'b'") == 3)
            #expect(try await database.intValue("SELECT units FROM quota_daily WHERE endpoint = 'e.list'") == 7)
            for view in ["cache_stats", "circuit_status", "throttle_status"] {
                #expect(try await database.intValue("SELECT count(*)::bigint FROM \(view)") == 0)
            }
        }
    }
}

@Suite("PostgreSQL store without a server")
struct PostgresUnreachableTests {
    @Test("a server that does not answer is a typed error naming host:port and what to check")
    func unreachableServer() async throws {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        let error = await #expect(throws: PostgresStoreError.self) {
            _ = try await PostgresStore(
                url: "postgresql://postgres:hunter2@127.0.0.1:1/tollgate",
                configuration: .init(connectTimeout: .seconds(3)), logger: PostgresTestDatabase.quietLogger
            )
        }
        guard case .unreachable(let server, _)? = error, let text = error?.description else {
            Issue.record("not unreachable: \(String(describing: error))")
            return
        }
        #expect(server == "127.0.0.1:1/tollgate")
        #expect(text.contains("127.0.0.1:1"), "\(text)")
        #expect(text.contains("Check that the server is running"), "\(text)")
        #expect(!text.contains("hunter2"), "\(text)")
    }
}
