import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

@Suite("Pacific days")
struct PacificDayTests {
    /// `2026-11-01T23:59:00-08:00` style instants, parsed with an explicit offset.
    static func instant(_ text: String) -> Date {
        ISO8601DateFormatter().date(from: text)!
    }

    @Test("the remembered day and window are the ones worked out anew, at midnights, DST changes and back in time")
    func rememberedPeriod() {
        let instants = [
            "2026-11-01T06:59:59.999Z", "2026-11-01T07:00:00Z", "2026-11-01T08:59:59Z", "2026-11-01T09:00:00Z",
            "2026-11-02T07:59:59.5Z", "2026-11-02T08:00:00Z", "2026-03-08T07:59:59Z", "2026-03-08T08:00:00Z",
            "2026-03-09T06:59:59Z", "2026-03-09T07:00:00Z", "2026-11-01T07:00:00Z", "1970-01-01T00:00:00Z",
        ].map { ISO8601DateFormatter.withFractions.date(from: $0) ?? Self.instant($0) }
        var generator = SystemRandomNumberGenerator()
        let random = (0..<500).map { _ in Date(timeIntervalSince1970: Double.random(in: 1.7e9...1.8e9, using: &generator)) }
        for instant in instants + random + random.reversed() {
            let (day, period) = QuotaPeriod.pacificDay(containing: instant)
            #expect(day == PacificDay(containing: instant), "\(instant)")
            #expect(period == QuotaPeriod(PacificDay(containing: instant)), "\(instant)")
        }
    }

    @Test("keys on an ordinary day, in standard and daylight time")
    func ordinaryKeys() {
        #expect(PacificDay(containing: Self.instant("2026-01-15T07:59:59Z")).key == "2026-01-14")
        #expect(PacificDay(containing: Self.instant("2026-01-15T08:00:00Z")).key == "2026-01-15")
        #expect(PacificDay(containing: Self.instant("2026-07-04T06:59:59Z")).key == "2026-07-03")
        #expect(PacificDay(containing: Self.instant("2026-07-04T07:00:00Z")).key == "2026-07-04")
        #expect(PacificDay(key: "2026-07-04")?.start == Self.instant("2026-07-04T07:00:00Z"))
        #expect(PacificDay(key: "2026-07-04")?.nextReset == Self.instant("2026-07-05T07:00:00Z"))
    }

    @Test("2026-03-08 lasts 23 hours: clocks spring forward at 02:00 PST")
    func springForward() throws {
        let day = try #require(PacificDay(key: "2026-03-08"))
        #expect(day.start == Self.instant("2026-03-08T00:00:00-08:00"))
        #expect(day.nextReset == Self.instant("2026-03-09T00:00:00-07:00"))
        #expect(day.length == .seconds(23 * 3600))
        #expect(PacificDay.utcOffset(at: Self.instant("2026-03-08T09:59:59Z")) == -8 * 3600)
        #expect(PacificDay.utcOffset(at: Self.instant("2026-03-08T10:00:00Z")) == -7 * 3600)
        #expect(PacificDay(containing: Self.instant("2026-03-08T23:59:59-07:00")).key == "2026-03-08")
        #expect(PacificDay(containing: Self.instant("2026-03-09T00:00:00-07:00")).key == "2026-03-09")
    }

    @Test("2026-11-01 lasts 25 hours: clocks fall back at 02:00 PDT")
    func fallBack() throws {
        let day = try #require(PacificDay(key: "2026-11-01"))
        #expect(day.start == Self.instant("2026-11-01T00:00:00-07:00"))
        #expect(day.nextReset == Self.instant("2026-11-02T00:00:00-08:00"))
        #expect(day.length == .seconds(25 * 3600))
        // 23:59 PT on the 1st and 00:00 PT on the 2nd are different quota days.
        #expect(PacificDay(containing: Self.instant("2026-11-01T23:59:00-08:00")).key == "2026-11-01")
        #expect(PacificDay(containing: Self.instant("2026-11-02T00:00:00-08:00")).key == "2026-11-02")
        // The repeated hour 01:00-02:00 belongs to the same day both times.
        #expect(PacificDay(containing: Self.instant("2026-11-01T01:30:00-07:00")).key == "2026-11-01")
        #expect(PacificDay(containing: Self.instant("2026-11-01T01:30:00-08:00")).key == "2026-11-01")
    }

    @Test("keys parse and print, invalid keys are refused")
    func keyParsing() {
        #expect(PacificDay(key: "2024-02-29")?.key == "2024-02-29")
        #expect(PacificDay(key: "2025-02-29") == nil)
        #expect(PacificDay(key: "2026-13-01") == nil)
        #expect(PacificDay(key: "26-1-1") == nil)
        #expect(PacificDay(key: "2026-12-31")?.next.key == "2027-01-01")
        #expect(PacificDay(key: "2027-01-01")?.previous.key == "2026-12-31")
        // Keys are written in place, four digits of year, zero-padded; past 9999 the year grows.
        #expect(PacificDay(key: "0999-01-09")?.key == "0999-01-09")
        #expect(PacificDay(key: "0001-10-31")?.previous.key == "0001-10-30")
        #expect(PacificDay(key: "9999-12-31")?.next.key == "10000-01-01")
    }

    @Test("every day from 2007 to 2040 agrees with the system's time-zone database")
    func agreesWithTimeZoneDatabase() throws {
        let zone = try #require(TimeZone(identifier: "America/Los_Angeles"))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        var day = try #require(PacificDay(key: "2007-01-01"))
        let last = try #require(PacificDay(key: "2040-12-31"))
        var mismatches: [String] = []
        while day <= last {
            let expected = calendar.date(from: DateComponents(year: day.year, month: day.month, day: day.day))
            if day.start != expected { mismatches.append(day.key) }
            // An instant in the afternoon, and the offset in force then.
            let afternoon = day.start.addingTimeInterval(15 * 3600)
            if PacificDay.utcOffset(at: afternoon) != zone.secondsFromGMT(for: afternoon) { mismatches.append(day.key + " offset") }
            day = day.next
        }
        #expect(mismatches.isEmpty)
    }

    @Test("the pacific_clock view's SQL gives the same date, offset and reset as PacificDay", arguments: [
        "2026-03-08T09:59:59Z", "2026-03-08T10:00:00Z", "2026-03-09T06:59:59Z", "2026-03-09T07:00:00Z",
        "2026-11-01T08:59:59Z", "2026-11-01T09:00:00Z", "2026-11-02T07:59:59Z", "2026-11-02T08:00:00Z",
        "2026-12-31T23:30:00Z", "2027-01-01T08:00:00Z", "2026-07-04T12:00:00Z", "2026-10-31T07:00:00Z",
    ])
    func viewAgreesWithSwift(_ text: String) throws {
        let instant = Self.instant(text)
        let store = try SQLiteStore(location: .inMemory)
        let row = try store.read { db in
            let viewSQL = try #require(
                try db.fetchValue(sql: "SELECT sql FROM sqlite_master WHERE name = 'pacific_clock'").string
            )
            // Replace the view's 'now' by the instant under test and run its body as a query.
            let header = try #require(viewSQL.range(of: "AS\n"))
            let query = viewSQL[header.upperBound...].replacingOccurrences(of: "'now'", with: "'\(Self.sqliteTimestamp(instant))'")
            return try db.fetchOne(sql: String(query))
        }
        let day = PacificDay(containing: instant)
        #expect(row?[0].string == day.key)
        #expect(row?[1].int == PacificDay.utcOffset(at: instant) / 3600)
        #expect(row?[2].int64 == Int64(instant.timeIntervalSince1970 * 1000))
        #expect(row?[3].string == Self.sqliteTimestamp(day.nextReset))
    }

    static func sqliteTimestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withSpaceBetweenDateAndTime, .withTime, .withColonSeparatorInTime]
        return formatter.string(from: date)
    }
}

@Suite("Manual clock")
struct ManualClockTests {
    @Test("a sleeper wakes when the clock passes its deadline, not before")
    func sleeperWakesOnAdvance() async throws {
        let clock = ManualClock()
        let start = clock.now()
        let sleeper = Task { try await clock.sleep(for: .seconds(60)) }
        while clock.sleeperCount == 0 { await Task.yield() }
        clock.advance(by: .seconds(59))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        try await sleeper.value
        #expect(clock.sleeperCount == 0)
        #expect(clock.now() == start.addingTimeInterval(60))
        #expect(clock.sleeps == [.seconds(60)])
    }

    @Test("a cancelled sleeper throws CancellationError")
    func cancelledSleeper() async throws {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(60)) }
        while clock.sleeperCount == 0 { await Task.yield() }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}

private extension ISO8601DateFormatter {
    /// Reads `2026-11-01T06:59:59.999Z`.
    static var withFractions: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
