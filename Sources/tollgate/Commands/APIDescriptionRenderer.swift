import Tollgate
import TollgateAPIDescription

/// The lines `tollgate api show` prints.
enum APIDescriptionRenderer {
    static func render(_ description: APIDescription) -> [String] {
        var lines = ["\(description.name)" + (description.upstream.map { " · \($0.absoluteStringWithoutCredentials)" } ?? "")]
        lines.append("")
        lines.append("Buckets")
        for (name, bucket) in description.buckets.sorted(by: { $0.key < $1.key }) {
            var line = "  \(name): \(bucket.limit.formatted()) units per \(bucket.window)"
            if let announced = bucket.announced {
                line += ", follows the server's announced \(announced.policy.map { "'\($0)' " } ?? "")\(announced.unit.rawValue) limit"
            }
            if let pacing = bucket.pacing {
                line += ", paces its last units keeping \(Int((pacing.reserveFraction * 100).rounded()))% back"
            }
            lines.append(line)
        }
        let defaults = description.defaults
        lines.append("")
        lines.append("Defaults: \(defaults.cost) unit(s) in \(defaults.bucket)"
            + ", \(notModified(defaults.notModifiedCost))"
            + ", throttle \(throttle(defaults.throttle)), circuit opens after \(defaults.circuit.failureThreshold) failures"
            + (defaults.freshFor.map { ", fresh for \($0)" } ?? ""))
        if !description.routes.isEmpty {
            lines.append("")
            lines.append("Routes (first match wins; others are named METHOD /path)")
            for route in description.routes {
                let methods = route.methods.isEmpty ? "*" : route.methods.sorted().joined(separator: ",")
                let path = "/" + route.segments.map { segment in
                    switch segment {
                    case .literal(let text): text
                    case .parameter(let name): "{\(name)}"
                    }
                }.joined(separator: "/")
                lines.append("  \(methods) \(path) → \(route.endpoint)")
            }
        }
        if !description.endpoints.isEmpty {
            lines.append("")
            lines.append("Endpoints")
            for (name, endpoint) in description.endpoints.sorted(by: { $0.key < $1.key }) {
                var parts: [String] = []
                if let charges = endpoint.charges {
                    parts.append(charges.map { "\($0.units) in \($0.bucket)" }.joined(separator: " + "))
                } else if endpoint.cost != nil || endpoint.bucket != nil {
                    parts.append("\(endpoint.cost ?? defaults.cost) in \(endpoint.bucket ?? defaults.bucket)")
                }
                if let cost = endpoint.notModifiedCost { parts.append(notModified(cost)) }
                if let limit = endpoint.throttle { parts.append("throttle \(throttle(limit))") }
                if let circuit = endpoint.circuit { parts.append("circuit after \(circuit.failureThreshold) failures") }
                if let retry = endpoint.retry { parts.append("\(retry.maximumRetries) retries") }
                if let fresh = endpoint.freshFor { parts.append("fresh for \(fresh)") }
                if let actual = endpoint.actualCost {
                    parts.append("settled at the actual cost in \(actual.bucket ?? endpoint.bucket ?? defaults.bucket) from the \(actual.source)")
                }
                lines.append("  \(name): \(parts.joined(separator: ", "))")
            }
        }
        if !description.quotaExhausted.isEmpty {
            lines.append("")
            lines.append("Quota spent (the endpoint's buckets close until their window ends)")
            for rule in description.quotaExhausted {
                var parts = ["\(rule.status)"]
                if let header = rule.header { parts.append("with \(header.name): \(header.value)") }
                if let reason = rule.reason { parts.append("with reason \(reason)") }
                lines.append("  " + parts.joined(separator: " "))
            }
        }
        if !description.rewriteURLs.bodies.isEmpty {
            lines.append("")
            lines.append("Links pointed at the proxy: Link, Location, Content-Location and the JSON bodies of "
                         + description.rewriteURLs.bodies.joined(separator: ", "))
        }
        return lines
    }

    private static func notModified(_ cost: NotModifiedCost) -> String {
        switch cost {
        case .full: "a 304 costs the full price"
        case .units(0): "a 304 is free"
        case .units(let units): "a 304 costs \(units) unit\(units == 1 ? "" : "s")"
        }
    }

    private static func throttle(_ limit: ThrottleLimit) -> String {
        let seconds = limit.window.components.seconds
        return seconds == 60 ? "\(limit.requests)/min" : "\(limit.requests) per \(seconds) s"
    }
}
