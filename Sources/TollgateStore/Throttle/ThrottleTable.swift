import Foundation

/// The throttle's SQL, on a ``Database`` inside a transaction the caller opened.
///
/// Each endpoint's window is its one `throttle_limits` row: the limit in force and, in
/// `admitted_at_ms`, the times of the requests it admitted that may still be in the window (a JSON
/// array of milliseconds, ascending, readable with `json_each` in `sqlite3`). An admission reads
/// the row by its primary key and writes it back once: no row per request, no index to keep.
///
/// The gate's admission composes ``evaluate(_:endpoint:limit:at:)`` and
/// ``save(_:_:admitting:)`` with the circuit's and the quota's steps in one `BEGIN IMMEDIATE`
/// transaction, so that the slot is written only once the quota has paid for it.
enum ThrottleTable {
    /// An endpoint's window as it stands at one instant, and what admitting a request there means.
    struct Window {
        let endpoint: String
        let limit: ThrottleLimit
        let nowMs: Int64
        /// Admitted requests still in the window, ascending; none later than `nowMs`.
        var admittedMs: [Int64]
        /// Whether the stored row differs from what `save` would write without admitting: missing,
        /// with other limits, or holding times that left the window.
        let isOutdated: Bool

        /// The decision for one more request.
        var admission: ThrottleAdmission {
            let count = admittedMs.count
            guard count < limit.requests else {
                return ThrottleAdmission(allowed: false, count: count, limit: limit.requests, retryAfter: timeUntilRoom)
            }
            return ThrottleAdmission(allowed: true, count: count + 1, limit: limit.requests, retryAfter: nil)
        }

        /// Seconds until the window has room for one more request (see ``ThrottleLimit/timeUntilRoom(admittedMs:nowMs:)``).
        var timeUntilRoom: TimeInterval { limit.timeUntilRoom(admittedMs: admittedMs, nowMs: nowMs) }
    }

    /// Admits and records, or refuses. See ``ThrottleStorage/admitRequest(endpoint:limit:at:)``.
    static func admit(_ db: Database, endpoint: String, limit: ThrottleLimit, at: Date) throws -> ThrottleAdmission {
        let window = try evaluate(db, endpoint: endpoint, limit: limit, at: at)
        let admission = window.admission
        try save(db, window, admitting: admission.allowed)
        return admission
    }

    /// Reads an endpoint's window, without writing.
    static func evaluate(_ db: Database, endpoint: String, limit: ThrottleLimit, at: Date) throws -> Window {
        guard limit.isValid else {
            throw StoreError.invalidArgument("invalid throttle limit for \(endpoint): \(limit)")
        }
        let nowMs = at.throttleMilliseconds
        let windowMs = limit.windowMilliseconds
        guard let row = try db.cachedStatement(
            "SELECT request_limit, window_ms, admitted_at_ms FROM throttle_limits WHERE endpoint = ?"
        ).fetchOne([.text(endpoint)]) else {
            return Window(endpoint: endpoint, limit: limit, nowMs: nowMs, admittedMs: [], isOutdated: true)
        }
        let stored = AdmittedTimes.decode(row[2].string ?? "[]")
        // Times after now were stamped before the wall clock was set back: they happened no later than now.
        var admitted = stored.map { min($0, nowMs) }
        let firstInWindow = admitted.firstIndex { $0 > nowMs - windowMs } ?? admitted.endIndex
        admitted.removeFirst(firstInWindow)
        let isOutdated = row[0].int != limit.requests || row[1].int64 != windowMs || admitted != stored
        return Window(endpoint: endpoint, limit: limit, nowMs: nowMs, admittedMs: admitted, isOutdated: isOutdated)
    }

    /// Writes a window back, with one more admitted request when `admitting`; writes nothing when
    /// the row is up to date and nothing is admitted.
    static func save(_ db: Database, _ window: Window, admitting: Bool) throws {
        guard admitting || window.isOutdated else { return }
        var admitted = window.admittedMs
        if admitting { admitted.append(window.nowMs) }
        try db.cachedStatement("""
            INSERT INTO throttle_limits (endpoint, request_limit, window_ms, updated_at_ms, admitted_at_ms)
            VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (endpoint) DO UPDATE SET
                updated_at_ms = CASE WHEN request_limit <> excluded.request_limit OR window_ms <> excluded.window_ms
                                     THEN excluded.updated_at_ms ELSE updated_at_ms END,
                request_limit = excluded.request_limit, window_ms = excluded.window_ms,
                admitted_at_ms = excluded.admitted_at_ms
            """
        ).execute([.text(window.endpoint), .int(window.limit.requests), .integer(window.limit.windowMilliseconds),
                   .integer(window.nowMs), .text(AdmittedTimes.encode(admitted))])
    }

    /// The window as it stands, read only. See ``ThrottleStorage/throttleWindow(endpoint:limit:at:)``.
    static func window(_ db: Database, endpoint: String, limit: ThrottleLimit, at: Date) throws -> ThrottleWindow {
        let window = try evaluate(db, endpoint: endpoint, limit: limit, at: at)
        let count = window.admittedMs.count
        let retryAfter = count < limit.requests ? 0 : window.timeUntilRoom
        return ThrottleWindow(endpoint: endpoint, count: count, limit: limit.requests, retryAfter: retryAfter)
    }

    /// Forgets recorded requests and records the reset. See ``ThrottleStorage/resetThrottle(endpoint:at:)``.
    static func reset(_ db: Database, endpoint: String?, at: Date) throws -> Int {
        let rows = if let endpoint {
            try db.fetchAll("SELECT admitted_at_ms FROM throttle_limits WHERE endpoint = ?", [.text(endpoint)])
        } else {
            try db.fetchAll("SELECT admitted_at_ms FROM throttle_limits")
        }
        let removed = rows.reduce(0) { $0 + AdmittedTimes.decode($1[0].string ?? "[]").count }
        if let endpoint {
            try db.execute("UPDATE throttle_limits SET admitted_at_ms = '[]' WHERE endpoint = ?", [.text(endpoint)])
        } else {
            try db.execute("UPDATE throttle_limits SET admitted_at_ms = '[]'")
        }
        try db.execute(
            "INSERT INTO admin_events (at_ms, subject, target, action, detail) VALUES (?, 'throttle', ?, 'reset', ?)",
            [.integer(at.throttleMilliseconds), .optionalText(endpoint),
             .text("forgot \(removed) recorded \(removed == 1 ? "request" : "requests")")]
        )
        return removed
    }
}

/// The `admitted_at_ms` column: a JSON array of integers, written and read without a JSON library.
enum AdmittedTimes {
    /// `[1, 2, 3]` without spaces. Written into one buffer: every admission rewrites its
    /// endpoint's window, and growing a `String` time by time showed in its profile.
    static func encode(_ times: [Int64]) -> String {
        var text: [UInt8] = [UInt8(ascii: "[")]
        text.reserveCapacity(2 + times.count * 14)
        for (index, time) in times.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ",")) }
            text.append(contentsOf: String(time).utf8)
        }
        text.append(UInt8(ascii: "]"))
        return String(decoding: text, as: UTF8.self)
    }

    /// The integers of the array, in order. Anything else in the text (a hand edit) is skipped,
    /// so a damaged row throttles less, never more, and is rewritten at the next admission.
    static func decode(_ text: String) -> [Int64] {
        var times: [Int64] = []
        var value: Int64 = 0
        var digits = 0
        var negative = false
        var damaged = false
        func finish() {
            if digits > 0, !damaged { times.append(negative ? -value : value) }
            (value, digits, negative, damaged) = (0, 0, false, false)
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
                let (next, carried) = shifted.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                damaged = damaged || overflowed || carried
                value = next
                digits += 1
            case UInt8(ascii: "-") where digits == 0:
                negative = true
            default:
                finish()
            }
        }
        finish()
        return times.sorted()
    }
}

extension Date {
    /// Milliseconds since 1970, as the throttle tables store times.
    fileprivate var throttleMilliseconds: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded(.down))
    }
}
