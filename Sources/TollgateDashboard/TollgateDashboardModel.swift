import Foundation
import Observation
import TollgateStore

/// The developer's debug dashboard as an observable model: the same snapshot as `tollgate dashboard` —
/// each bucket's used and limit with its reset, each endpoint's units today, circuits with the time
/// until their retry, throttle windows, the cache's hit rate — refreshed when the store changes,
/// whichever process changed it, and at most once every ``minimumInterval``.
///
/// ```swift
/// #if DEBUG
/// @State private var dashboard = TollgateDashboardModel(store: store)
/// var body: some View {
///     TollgateDashboardView(model: dashboard).task { await dashboard.run() }
/// }
/// #endif
/// ```
@MainActor
@Observable
public final class TollgateDashboardModel {
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
    @ObservationIgnored private let now: @Sendable () -> Date
    @ObservationIgnored private var lastMark: StoreChangeMark?

    /// Creates a model over a SQLite store, refreshed when any process commits to its file.
    /// - Parameters:
    ///   - store: The store.
    ///   - minimumInterval: The shortest time between two reads; one second by default.
    ///   - pollInterval: How often the file's change mark is looked at; a quarter second by default.
    public convenience init(
        store: SQLiteStore, minimumInterval: Duration = .seconds(1), pollInterval: Duration = .milliseconds(250)
    ) {
        self.init(storage: store, changeMark: { store.changeMark }, minimumInterval: minimumInterval,
                  pollInterval: pollInterval)
    }

    /// Creates a model over any store that can describe itself (PostgreSQL too).
    /// - Parameters:
    ///   - storage: The store.
    ///   - changeMark: A mark that changes when the store does, nil when it cannot tell (the store
    ///     is then read every ``minimumInterval``).
    ///   - minimumInterval: The shortest time between two reads.
    ///   - pollInterval: How often `changeMark` is looked at.
    ///   - now: The wall clock the snapshot is taken at.
    public init(
        storage: any DashboardSnapshotStorage, changeMark: @escaping @Sendable () -> StoreChangeMark? = { nil },
        minimumInterval: Duration = .seconds(1), pollInterval: Duration = .milliseconds(250),
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.store = storage
        self.changeMark = changeMark
        self.minimumInterval = minimumInterval
        self.pollInterval = min(pollInterval, minimumInterval)
        self.now = now
    }

    /// Reads the store now.
    public func refresh() async {
        lastMark = changeMark()
        do {
            let at = now()
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
        let clock = ContinuousClock()
        await refresh()
        var lastRead = clock.now
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: pollInterval)
            } catch {
                return
            }
            let mark = changeMark()
            let changed = mark == nil || mark != lastMark
            guard changed, clock.now - lastRead >= minimumInterval else { continue }
            await refresh()
            lastRead = clock.now
        }
    }
}
