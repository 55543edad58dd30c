import Foundation

/// Reads Prometheus text with Prometheus's own client library's parser (Python's
/// `prometheus_client.parser`, installed by .ci/run), not with string matching: a test that
/// passes here passes a real scraper's parser.
public enum PrometheusTextParser {
    /// One metric family as the parser read it.
    public struct Family: Sendable, Decodable {
        /// Its name (the parser drops a counter's `_total`).
        public let name: String
        /// `counter`, `gauge`, `histogram`…; `unknown` when no `# TYPE` line named it.
        public let type: String
        /// Its `# HELP` text; empty when there was none.
        public let documentation: String
        /// Its samples.
        public let samples: [Sample]
    }

    /// One sample.
    public struct Sample: Sendable, Decodable {
        /// The sample's name (`…_total`, `…_bucket`, `…_count`, `…_sum` for counters and histograms).
        public let name: String
        /// Its labels.
        public let labels: [String: String]
        /// Its value.
        public let value: Double
    }

    /// What the parser said, or why it refused the text.
    public enum ParseError: Error, CustomStringConvertible {
        case refused(String)
        public var description: String {
            switch self {
            case .refused(let message): "prometheus_client refused the text: \(message)"
            }
        }
    }

    static let script = """
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        families = []
        for family in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read()):
            families.append({"name": family.name, "type": family.type, "documentation": family.documentation,
                             "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples]})
        print(json.dumps(families))
        """

    /// Parses `text`.
    /// - Parameter text: Prometheus text format.
    /// - Returns: The families, in the order the text gives them.
    /// - Throws: ``ParseError`` when the parser refuses the text.
    public static func parse(_ text: String) throws -> [Family] {
        let directory = try TemporaryDirectory()
        let file = directory.path("metrics.txt")
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let result = try withExtendedLifetime(directory) {
            try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, file], timeLimit: 60)
        }
        guard result.status == 0 else { throw ParseError.refused(result.stderr) }
        return try JSONDecoder().decode([Family].self, from: Data(result.stdout.utf8))
    }
}

extension [PrometheusTextParser.Family] {
    /// The value of the sample named `name` whose labels include `labels`; nil when there is none.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        for family in self {
            for sample in family.samples where sample.name == name {
                if labels.allSatisfy({ sample.labels[$0.key] == $0.value }) { return sample.value }
            }
        }
        return nil
    }

    /// The family named `name`.
    public func family(_ name: String) -> PrometheusTextParser.Family? {
        first { $0.name == name }
    }
}
