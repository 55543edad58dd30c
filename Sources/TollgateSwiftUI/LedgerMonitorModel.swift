import Foundation
import Observation
import TollgateCore

/// An app's own view of its ledger, as an observable model: the same snapshot as `tollgate
/// dashboard` — each bucket's used and limit with its reset, each endpoint's units today, circuits
/// with the time until their retry, throttle windows, the cache's hit rate — refreshed when the
/// store changes, whichever process changed it, and at most once every ``minimumInterval``.
///
/// It reads any store that gives a snapshot: the app's SQLite file, or a fleet's PostgreSQL.
///
/// ```swift
/// #if DEBUG
/// @State private var monitor = LedgerMonitorModel(store: store)
/// var body: some View {
///     LedgerMonitorView(model: monitor).task { await monitor.run() }
/// }
/// #endif
/// ```
@MainActor
@Observable
public final class LedgerMonitorModel {
    /// The latest snapshot; nil until the first read.
    public private(set) var snapshot: DashboardSnapshot?
    /// When ``snapshot`` was read.
    public private(set) var refreshedAt: Date?
    /// Why the last read failed, if it did; the previous snapshot stays.
    public private(set) var lastError: String?
    /// How many times the store was read: for tests and for a view's "live" indicator.
    public private(set) var refreshCount = 0

    /// The shortest time between two reads of the store, however often it changes.
    public let minimumInterval: Duration
    /// How often the store's change mark is looked at (a lock-free read of shared memory on
    /// SQLite) — or, for a store without one, how often it is read outright.
    public let pollInterval: Duration

    @ObservationIgnored private let store: any DashboardSnapshotStorage
    @ObservationIgnored private let changeMark: @Sendable () -> StoreChangeMark?
    @ObservationIgnored private let clock: any TollgateClock
    @ObservationIgnored private var lastMark: StoreChangeMark?

    /// Creates a model over a store, refreshed when it changes if it can tell (SQLite can: any
    /// process's commit to its file moves its ``ChangeMarkingStorage/changeMark``), else read every
    /// ``minimumInterval``.
    /// - Parameters:
    ///   - store: The store: an `SQLiteStore`, a `PostgresStore`, or any store that gives a snapshot.
    ///   - minimumInterval: The shortest time between two reads; one second by default.
    ///   - pollInterval: How often the store's change mark is looked at; a quarter second by default.
    ///   - clock: The wall clock the snapshot is taken at, and the one the model waits on.
    public convenience init(
        store: any DashboardSnapshotStorage, minimumInterval: Duration = .seconds(1),
        pollInterval: Duration = .milliseconds(250), clock: any TollgateClock = SystemClock()
    ) {
        let changeMarking = store as? any ChangeMarkingStorage
        self.init(storage: store, changeMark: { changeMarking?.changeMark }, minimumInterval: minimumInterval,
                  pollInterval: pollInterval, clock: clock)
    }

    /// Creates a model over a store, with the change mark given apart.
    /// - Parameters:
    ///   - storage: The store.
    ///   - changeMark: A mark that changes when the store does, nil when it cannot tell (the store
    ///     is then read every ``minimumInterval``).
    ///   - minimumInterval: The shortest time between two reads.
    ///   - pollInterval: How often `changeMark` is looked at.
    ///   - clock: The wall clock the snapshot is taken at, and the one the model waits on.
    public init(
        storage: any DashboardSnapshotStorage, changeMark: @escaping @Sendable () -> StoreChangeMark? = { nil },
        minimumInterval: Duration = .seconds(1), pollInterval: Duration = .milliseconds(250),
        clock: any TollgateClock = SystemClock()
    ) {
        self.store = storage
        self.changeMark = changeMark
        self.minimumInterval = minimumInterval
        self.pollInterval = min(pollInterval, minimumInterval)
        self.clock = clock
    }

    /// Reads the store now.
    public func refresh() async {
        lastMark = changeMark()
        do {
            let at = clock.now()
            snapshot = try await store.dashboardSnapshot(at: at, recentEvents: 8)
            refreshedAt = at
            lastError = nil
        } catch {
            lastError = "\(error)"
        }
        refreshCount += 1
    }

    /// Keeps ``snapshot`` current until the calling task is cancelled (SwiftUI's `.task` does it
    /// when the view goes away): reads once, then again after each change, no more often than
    /// ``minimumInterval``. Without a change mark, reads every ``minimumInterval``.
    public func run() async {
        await refresh()
        var lastRead = clock.now()
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: pollInterval)
            } catch {
                return
            }
            let mark = changeMark()
            let changed = mark == nil || mark != lastMark
            guard changed, Duration.seconds(clock.now().timeIntervalSince(lastRead)) >= minimumInterval else { continue }
            await refresh()
            lastRead = clock.now()
        }
    }
}
