import Foundation

/// The Prometheus text format (version 0.0.4), written in one pass: each metric's `# HELP` and
/// `# TYPE` lines, then all its samples (the format groups a metric's samples), label values escaped.
struct PrometheusText {
    private(set) var rendered = ""

    /// Writes a gauge with one sample and no labels.
    /// - Parameters:
    ///   - name: The metric's name, with its unit (`tollgate_cache_body_bytes`).
    ///   - help: The help text.
    ///   - value: The sample.
    mutating func gauge(_ name: String, _ help: String, value: Double) {
        header(name, help)
        rendered += "\(name) \(Self.formatted(value))\n"
    }

    /// Writes a gauge with a sample for each item; nothing at all when there are none, as a registry
    /// writes no metric that has no series.
    /// - Parameters:
    ///   - name: The metric's name, with its unit (`tollgate_quota_used_units`).
    ///   - help: The help text.
    ///   - items: What the samples are of.
    ///   - sample: An item's labels and value.
    mutating func gauge<Item>(
        _ name: String, _ help: String, _ items: [Item], _ sample: (Item) -> (labels: [(String, String)], value: Double)
    ) {
        guard !items.isEmpty else { return }
        header(name, help)
        for item in items {
            let (labels, value) = sample(item)
            rendered += name
            rendered += "{"
            for (index, (label, labelValue)) in labels.enumerated() {
                if index > 0 { rendered += "," }
                rendered += "\(label)=\"\(Self.escapedLabel(labelValue))\""
            }
            rendered += "} \(Self.formatted(value))\n"
        }
    }

    private mutating func header(_ name: String, _ help: String) {
        rendered += "# HELP \(name) \(Self.escapedHelp(help))\n# TYPE \(name) gauge\n"
    }

    /// Help text with `\` and newlines escaped.
    static func escapedHelp(_ help: String) -> String {
        help.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// A label value with `\`, `"` and newlines escaped.
    static func escapedLabel(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") })
        else { return value }
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count + 8)
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A sample's value as Prometheus writes it (`+Inf`, `NaN`, whole numbers without a fraction).
    static func formatted(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
