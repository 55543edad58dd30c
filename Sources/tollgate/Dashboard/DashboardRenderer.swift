import Foundation
import TollgateCore
import TollgateSQLite

/// Draws a ``DashboardSnapshot`` as lines of text that fit a terminal (80×24 by default), with
/// ANSI colours when the output is a terminal and plain text otherwise.
struct DashboardRenderer {
    /// How many recent ledger events and circuit transitions the dashboard shows.
    static let recentEvents = 8

    var width = 80
    var height = 24
    var colours = true
    var databasePath: String
    /// Whether every row is drawn (`status`), or each section is cut to fit the screen with a
    /// line that says how many rows are not shown (`dashboard`).
    var showsEveryRow = false

    func render(_ snapshot: DashboardSnapshot) -> [String] {
        var lines: [String] = []
        let title = "Tollgate · \(databasePath)"
        let clock = PacificDay.localTimeDescription(of: snapshot.takenAt)
        lines.append(fit(bold(title), clock))
        let countdown = Self.duration(snapshot.resetsAt.timeIntervalSince(snapshot.takenAt))
        lines.append("Quota day \(snapshot.pacificDate) · resets in \(countdown) "
            + "(\(PacificDay.localTimeDescription(of: snapshot.resetsAt)))")

        var quotaLines: [String] = []
        for bucket in snapshot.buckets {
            let fraction = bucket.limit == 0 ? 1 : Double(bucket.used) / Double(bucket.limit)
            let state = bucket.exhaustedUntil != nil ? red(" EXHAUSTED") : ""
            // A bucket counted over its own window says which, and when it resets.
            let window = bucket.window.map { window in
                " per \(window)" + (bucket.resetsAt.map { " · resets in \(Self.duration($0.timeIntervalSince(snapshot.takenAt)))" } ?? "")
            } ?? ""
            let numbers = "\(Self.grouped(bucket.used))/\(Self.grouped(bucket.limit)) · \(Self.grouped(bucket.remaining)) left\(window)"
            quotaLines.append("\(pad(bucket.bucket, 12)) \(bar(fraction, width: 24)) \(numbers)\(state)")
            let endpoints = bucket.endpoints.map { "\($0.endpoint) \(Self.grouped($0.units))u/\($0.calls)" }
            if showsEveryRow {
                quotaLines += endpoints.map { "  " + $0 }
            } else if !endpoints.isEmpty {
                let shown = Array(endpoints.prefix(4)) + (endpoints.count > 4 ? ["and \(endpoints.count - 4) more"] : [])
                quotaLines.append("  " + shown.joined(separator: "  "))
            }
        }
        if quotaLines.isEmpty { quotaLines = [dim("  no buckets yet")] }

        var circuitLines = snapshot.circuits.map { circuit -> String in
            let state: String
            switch circuit.state {
            case "open": state = red("OPEN     ")
            case "half_open": state = yellow("HALF-OPEN")
            default: state = green("CLOSED   ")
            }
            let retry = circuit.state == "open" ? " retry in \(circuit.retryInSeconds)s" : ""
            return "  \(pad(circuit.endpoint, 22)) \(state) \(circuit.consecutiveFailures)/\(circuit.failureThreshold)\(retry)"
                + (circuit.trips > 0 ? "  trips \(circuit.trips)" : "")
        }
        if circuitLines.isEmpty { circuitLines = [dim("  no circuits yet")] }

        var throttleLines = snapshot.throttles.map { throttle in
            "  \(pad(throttle.endpoint, 22)) \(throttle.count)/\(throttle.limit) per \(Int(throttle.windowSeconds))s"
                + (throttle.remaining == 0 ? red(" FULL") : "")
        }
        if throttleLines.isEmpty { throttleLines = [dim("  no throttle windows yet")] }

        let totals = snapshot.cache.reduce(into: (hits: 0, revalidations: 0, misses: 0, stale: 0, saved: 0)) {
            $0.hits += $1.hits; $0.revalidations += $1.revalidations; $0.misses += $1.misses
            $0.stale += $1.stale; $0.saved += $1.bytesSaved
        }
        let rate = snapshot.cacheHitRate.map { String(format: "%.1f%%", $0 * 100) } ?? "–"
        let cacheLine = "Cache  hit rate \(rate) · hits \(totals.hits) · revalidated \(totals.revalidations) · "
            + "misses \(totals.misses) · stale \(totals.stale) · saved \(Self.bytes(totals.saved)) · "
            + "\(snapshot.cacheEntries) entries"

        var events = snapshot.recentLedgerEvents.map { event in
            "  \(Self.time(event.at)) \(pad(event.kind, 9)) \(event.endpoint) \(event.units >= 0 ? "+" : "")\(event.units)"
        } + snapshot.recentCircuitTransitions.map { transition in
            "  \(Self.time(transition.at)) circuit   \(transition.endpoint) \(transition.from)→\(transition.to): \(transition.reason)"
        }
        events.sort { $0.dropFirst(2).prefix(8) > $1.dropFirst(2).prefix(8) }

        // What a gate serves without asking, and why: only when the API's configuration is known.
        let freshnessLines = (snapshot.freshness ?? []).map { row in
            "  \(row.endpoint == "*" ? "every other endpoint" : row.endpoint): fresh for \(Int(row.lifetimeSeconds.rounded())) s"
                + " · fresh_for \(row.chosen) · \(row.why)" + (row.decidedBy == .ledger ? " (decided from the ledger now)" : "")
        }

        // Fixed lines: 2 header, 4 section titles (5 with freshness), 1 cache, 1 footer. Share the rest.
        var budget = max(0, height - 8 - (freshnessLines.isEmpty ? 0 : 1))
        func take(_ section: [String], _ maximum: Int) -> [String] {
            if showsEveryRow { return section }
            let count = min(section.count, maximum, budget)
            budget -= count
            guard count < section.count, count > 0 else { return Array(section.prefix(count)) }
            // Never drop rows silently: the last line shown says how many are not.
            return Array(section.prefix(count - 1)) + [dim("  … and \(section.count - count + 1) more")]
        }
        let quota = take(quotaLines, 6)
        let circuits = take(circuitLines, 5)
        let throttles = take(throttleLines, 3)
        let freshness = take(freshnessLines, 3)
        let recent = take(events, budget)

        lines.append(bold("Quota"))
        lines += quota
        lines.append(bold("Circuits"))
        lines += circuits
        lines.append(bold("Throttles"))
        lines += throttles
        if !freshnessLines.isEmpty {
            lines.append(bold("Freshness in force (served without asking after a fetch or revalidation)"))
            lines += freshness
        }
        lines.append(cacheLine)
        lines.append(bold("Recent events"))
        lines += recent
        lines.append(dim(colours ? "q or Ctrl-C quits" : ""))
        // Status prints whole lines: a long endpoint name is never cut.
        return showsEveryRow ? lines : lines.map(clip)
    }

    // MARK: Formatting

    private func bar(_ fraction: Double, width: Int) -> String {
        let filled = max(0, min(width, Int((fraction * Double(width)).rounded())))
        let text = "[" + String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled) + "]"
        if fraction >= 0.95 { return red(text) }
        if fraction >= 0.8 { return yellow(text) }
        return green(text)
    }

    private func fit(_ left: String, _ right: String) -> String {
        let space = max(1, width - visibleLength(left) - visibleLength(right))
        return left + String(repeating: " ", count: space) + right
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }

    /// Cuts a line to the terminal width, not counting colour escapes.
    private func clip(_ line: String) -> String {
        guard visibleLength(line) > width else { return line }
        var result = ""
        var visible = 0
        var inEscape = false
        for character in line {
            if character == "\u{1B}" { inEscape = true }
            if inEscape {
                result.append(character)
                if character == "m" { inEscape = false }
                continue
            }
            guard visible < width - 1 else { continue }
            result.append(character)
            visible += 1
        }
        return result + "…" + (colours ? "\u{1B}[0m" : "")
    }

    private func visibleLength(_ text: String) -> Int {
        var count = 0
        var inEscape = false
        for character in text {
            if character == "\u{1B}" { inEscape = true; continue }
            if inEscape { if character == "m" { inEscape = false }; continue }
            count += 1
        }
        return count
    }

    private func paint(_ code: String, _ text: String) -> String {
        colours ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
    private func bold(_ text: String) -> String { paint("1", text) }
    private func dim(_ text: String) -> String { paint("2", text) }
    private func red(_ text: String) -> String { paint("31", text) }
    private func green(_ text: String) -> String { paint("32", text) }
    private func yellow(_ text: String) -> String { paint("33", text) }

    static func grouped(_ value: Int) -> String {
        let digits = String(abs(value))
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return (value < 0 ? "-" : "") + result
    }

    static func duration(_ seconds: TimeInterval) -> String {
        let total = max(0, Int(seconds))
        return total >= 3600 ? "\(total / 3600)h\(String(format: "%02d", (total % 3600) / 60))m"
            : "\(total / 60)m\(String(format: "%02d", total % 60))s"
    }

    static func bytes(_ count: Int) -> String {
        switch count {
        case ..<1024: "\(count) B"
        case ..<(1024 * 1024): String(format: "%.1f KiB", Double(count) / 1024)
        default: String(format: "%.1f MiB", Double(count) / 1_048_576)
        }
    }

    static func time(_ date: Date) -> String {
        String(PacificDay.localTimeDescription(of: date).dropFirst(11).prefix(5))
            + String(format: ":%02d", Int(date.timeIntervalSince1970) % 60)
    }
}
