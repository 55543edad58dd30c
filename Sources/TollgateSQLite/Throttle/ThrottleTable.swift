import Foundation
import TollgateCore

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
        /// Whether the endpoint has a row at all.
        var isStored = true
        /// Whether the endpoint has a row and it holds this window's limits, so that saving it
        /// changes only its times.
        var limitsStored = false

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
        try limit.validate(endpoint: endpoint)
        let nowMs = at.millisecondsSince1970
        let windowMs = limit.windowMilliseconds
        guard let row = try storedRow(db, endpoint: endpoint) else {
            return Window(endpoint: endpoint, limit: limit, nowMs: nowMs, admittedMs: [], isOutdated: true, isStored: false)
        }
        let stored = row.admittedMs
        // Ascending, so the times that left the window are a prefix; when none did, and none is
        // later than now, the window is the stored array itself, not a copy.
        let firstInWindow = stored.firstIndex { $0 > nowMs - windowMs } ?? stored.endIndex
        var admitted = firstInWindow == 0 ? stored : Array(stored[firstInWindow...])
        // Times after now were stamped before the wall clock was set back: they happened no later
        // than now. Being ascending, they are a suffix.
        let firstLater = admitted.lastIndex { $0 <= nowMs }.map { $0 + 1 } ?? admitted.startIndex
        let clampedToNow = firstLater < admitted.endIndex
        for index in firstLater..<admitted.endIndex { admitted[index] = nowMs }
        let limitsChanged = row.requestLimit != limit.requests || row.windowMs != windowMs
        return Window(endpoint: endpoint, limit: limit, nowMs: nowMs, admittedMs: admitted,
                      isOutdated: limitsChanged || firstInWindow != 0 || clampedToNow, limitsStored: !limitsChanged)
    }

    /// The endpoint's row: as the connection remembers it when nothing committed since it last
    /// read or wrote it (see ``RememberedRows``).
    private static func storedRow(_ db: Database, endpoint: String) throws -> RememberedRows.ThrottleRow? {
        if let remembered = db.rememberedRows.throttleRow(endpoint) { return remembered }
        let row = try db.cachedStatement(
            sql: "SELECT request_limit, window_ms, admitted_at_ms FROM throttle_limits WHERE endpoint = ?"
        ).fetchOne(arguments: [endpoint]).map { row in
            RememberedRows.ThrottleRow(
                requestLimit: try row.decode(Int.self, forColumn: "request_limit"),
                windowMs: try row.decode(Int64.self, forColumn: "window_ms"),
                admittedMs: AdmittedTimes.decode(try row.decode(String.self, forColumn: "admitted_at_ms"))
            )
        }
        db.rememberedRows.remember(throttleRow: row, for: endpoint)
        return row
    }

    /// Writes a window back, with one more admitted request when `admitting`; writes nothing when
    /// the row is up to date and nothing is admitted, and never makes a row for a request it does not
    /// admit: a refused request leaves no permanent trace of an endpoint name a client made up.
    static func save(_ db: Database, _ window: Window, admitting: Bool) throws {
        guard admitting || (window.isOutdated && window.isStored) else { return }
        var admitted = window.admittedMs
        if admitting { admitted.append(window.nowMs) }
        // The row read or remembered in this transaction holds these limits: only its times
        // change, without the upsert's attempted insert and its comparisons. Should it be gone
        // all the same, the upsert writes it.
        var updatedInPlace = false
        if window.limitsStored {
            try db.cachedStatement(sql: "UPDATE throttle_limits SET admitted_at_ms = ? WHERE endpoint = ?")
                .execute(AdmittedTimes.encode(admitted), window.endpoint)
            updatedInPlace = db.changesCount == 1
        }
        if !updatedInPlace { try upsert(db, window, admitted: admitted) }
        db.rememberedRows.remember(
            throttleRow: RememberedRows.ThrottleRow(requestLimit: window.limit.requests,
                                                    windowMs: window.limit.windowMilliseconds, admittedMs: admitted),
            for: window.endpoint
        )
    }

    private static func upsert(_ db: Database, _ window: Window, admitted: [Int64]) throws {
        try db.cachedStatement(sql: """
            INSERT INTO throttle_limits (endpoint, request_limit, window_ms, updated_at_ms, admitted_at_ms)
            VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (endpoint) DO UPDATE SET
                updated_at_ms = CASE WHEN request_limit <> excluded.request_limit OR window_ms <> excluded.window_ms
                                     THEN excluded.updated_at_ms ELSE updated_at_ms END,
                request_limit = excluded.request_limit, window_ms = excluded.window_ms,
                admitted_at_ms = excluded.admitted_at_ms
            """
        ).execute(window.endpoint, window.limit.requests, window.limit.windowMilliseconds, window.nowMs,
                  AdmittedTimes.encode(admitted))
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
            try db.cachedStatement(sql: "SELECT admitted_at_ms FROM throttle_limits WHERE endpoint = ?").fetchAll(arguments: [endpoint])
        } else {
            try db.cachedStatement(sql: "SELECT admitted_at_ms FROM throttle_limits").fetchAll()
        }
        let removed = try rows.reduce(0) { $0 + AdmittedTimes.decode(try $1.decode(String.self, forColumn: "admitted_at_ms")).count }
        db.rememberedRows.forgetThrottleRows()
        if let endpoint {
            try db.cachedStatement(sql: "UPDATE throttle_limits SET admitted_at_ms = '[]' WHERE endpoint = ?").execute(arguments: [endpoint])
        } else {
            try db.cachedStatement(sql: "UPDATE throttle_limits SET admitted_at_ms = '[]'").execute()
        }
        try db.cachedStatement(sql: "INSERT INTO admin_events (at_ms, subject, target, action, detail) VALUES (?, 'throttle', ?, 'reset', ?)").execute(arguments: [at.millisecondsSince1970, endpoint,
             "forgot \(removed) recorded \(removed == 1 ? "request" : "requests")"])
        return removed
    }
}

/// The `admitted_at_ms` column: a JSON array of integers, written and read without a JSON library.
///
/// Every admission reads and rewrites its endpoint's window (tens of times long in the admission
/// benchmark): both directions work on bytes, with no `String` per time, because that showed as
/// a fifth of an admission in its profile.
enum AdmittedTimes {
    /// `[1, 2, 3]` without spaces.
    ///
    /// The times of one window are close, so each shares its digit count and most of its leading
    /// digits with the one before: those are copied from it, and only the digits that differ are
    /// computed (in the admission benchmark's window of 66 times, 0.45 µs against 1.3 µs for
    /// every digit of every time).
    static func encode(_ times: [Int64]) -> String {
        // A time is at most a sign and 19 digits; a comma between, and the brackets.
        String(unsafeUninitializedCapacity: 2 + times.count * 21) { buffer in
            var end = 0
            func append(_ byte: UInt8) {
                buffer[end] = byte
                end += 1
            }
            func digit(_ value: UInt64) -> UInt8 { UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10) }
            // The time before: where its digits start, their count, its magnitude and sign, and
            // the power of ten just above it.
            var previous = (start: 0, count: 0, magnitude: UInt64(0), negative: false, powerAbove: UInt64(0))
            append(UInt8(ascii: "["))
            for (index, time) in times.enumerated() {
                if index > 0 { append(UInt8(ascii: ",")) }
                let negative = time < 0
                if negative { append(UInt8(ascii: "-")) }
                let magnitude = time.magnitude
                var count = previous.count
                if index == 0 || negative != previous.negative || magnitude < previous.magnitude
                    || magnitude >= previous.powerAbove {
                    count = 1
                    var power: UInt64 = 10
                    while count < 20, magnitude >= power {
                        count += 1
                        power = power &* 10
                    }
                    // Twenty digits: above every magnitude an Int64 has.
                    previous.powerAbove = count == 20 ? .max : power
                }
                let start = end
                end += count
                // The digits are written from the last; with as many digits as the time before,
                // they stop where the rest is that time's rest, and its leading digits are copied.
                var position = end
                var rest = magnitude
                var previousRest = count == previous.count && index > 0 && negative == previous.negative
                    ? previous.magnitude : UInt64.max
                repeat {
                    position -= 1
                    buffer[position] = digit(rest)
                    rest /= 10
                    previousRest /= 10
                } while rest > 0 && rest != previousRest
                for offset in 0..<(position - start) {
                    buffer[start + offset] = buffer[previous.start + offset]
                }
                previous = (start, count, magnitude, negative, previous.powerAbove)
            }
            append(UInt8(ascii: "]"))
            return end
        }
    }

    /// The integers of the array, ascending. Anything else in the text (a hand edit) is skipped,
    /// and so is a number that does not fit an `Int64`, so a damaged row throttles less, never
    /// more, and is rewritten at the next admission.
    static func decode(_ text: String) -> [Int64] {
        var text = text
        return text.withUTF8 { bytes in
            var times: [Int64] = []
            // A time now is 13 digits and a comma.
            times.reserveCapacity(bytes.count / 14 + 1)
            var ascending = true
            // Up to 19 digits cannot overflow a UInt64; what is past Int64's range is skipped.
            var magnitude: UInt64 = 0
            var digits = 0
            var negative = false
            func finish() {
                if digits > 0, digits <= 19, magnitude <= UInt64(Int64.max) {
                    let time = negative ? -Int64(magnitude) : Int64(magnitude)
                    if let last = times.last, last > time { ascending = false }
                    times.append(time)
                }
                (magnitude, digits, negative) = (0, 0, false)
            }
            for byte in bytes {
                let digit = byte &- UInt8(ascii: "0")
                if digit < 10 {
                    magnitude = magnitude &* 10 &+ UInt64(digit)
                    digits += 1
                } else if byte == UInt8(ascii: "-"), digits == 0 {
                    negative = true
                } else {
                    finish()
                }
            }
            finish()
            if !ascending { times.sort() }
            return times
        }
    }
}
