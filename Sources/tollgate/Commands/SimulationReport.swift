import Foundation
import TollgateSimulation

/// `tollgate simulate`'s text: one column per description, a row per number.
enum SimulationReport {
    static func render(_ results: [SimulationResult], exchanges: Int, file: String) -> [String] {
        // A description given as a path is headed by its file's name: the columns stay narrow.
        let names = results.map { URL(fileURLWithPath: $0.api).lastPathComponent }
        var rows: [(String, [String])] = []
        func row(_ label: String, _ value: (SimulationResult) -> String) { rows.append((label, results.map(value))) }
        row("requests") { "\($0.requests)" }
        row("sent upstream") { "\($0.sent)" }
        row("units") { "\($0.units)" }
        let buckets = Set(results.flatMap(\.buckets.keys)).sorted()
        for bucket in buckets {
            row("  \(bucket)") { result in
                guard let b = result.buckets[bucket] else { return "—" }
                return "\(b.units) (limit \(b.limit)/\(b.window))"
            }
            row("  \(bucket) runs out") { result in
                guard let b = result.buckets[bucket] else { return "—" }
                return b.runsOutAt.map(Self.time) ?? "no · \(b.remainingAtEnd) left"
            }
        }
        row("refused") { result in
            result.refusals.isEmpty ? "0"
                : result.refusals.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        }
        row("served stale") { "\($0.stale)" }
        row("hit rate") { $0.hitRate.map { String(format: "%.1f %%", $0 * 100) } ?? "—" }
        row("saved: cache") { "\($0.saved.cache)" }
        row("saved: 304") { "\($0.saved.notModified)" }
        row("saved: coalescing") { "\($0.saved.coalescing)" }
        row("saved: stale") { "\($0.saved.stale)" }
        row("not in recording") { "\($0.unrecorded)" }
        let labelWidth = max(18, rows.map(\.0.count).max() ?? 0)
        let widths = results.indices.map { index in
            max(names[index].count, rows.map { $0.1[index].count }.max() ?? 0)
        }
        func line(_ label: String, _ cells: [String]) -> String {
            label.padding(toLength: labelWidth, withPad: " ", startingAt: 0) + "  "
                + zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "   ")
        }
        var lines = ["\(file): \(exchanges) recorded requests", line("", names)]
        lines += rows.map { line($0.0, $0.1) }
        for result in results where !result.refusalsByEndpoint.isEmpty {
            lines.append("")
            lines.append("\(URL(fileURLWithPath: result.api).lastPathComponent): refusals by endpoint")
            for (endpoint, kinds) in result.refusalsByEndpoint.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(endpoint): " + kinds.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
            }
        }
        for result in results {
            lines.append("")
            lines.append("\(URL(fileURLWithPath: result.api).lastPathComponent): top endpoints by units")
            for top in result.topEndpoints.prefix(5) {
                lines.append("  \(top.endpoint): \(top.units) units, \(top.requests) requests")
            }
        }
        return lines
    }

    private static func time(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
