import Foundation
import HTTPTypes
import Tollgate

extension APIDescription {
    /// The routes as the gate's naming: the first route that matches names the request; a request
    /// that matches none is `METHOD /path`.
    ///
    /// Each route's name is a template: at most 100 distinct values per template
    /// (``EndpointNameBudget``), then `repos.other.list`; unmatched paths likewise per method.
    public var naming: EndpointNaming {
        let routes = routes
        return EndpointNaming(templated: { method, path in
            Self.templatedName(method: method.rawValue, path: path, routes: routes)
                ?? EndpointNaming.byPath(method: method, path: path)
        })
    }

    /// The endpoint a route gives a request, or nil when no route matches.
    /// - Parameters:
    ///   - method: The request's method, such as `GET`.
    ///   - path: Its path, without query.
    /// - Returns: The endpoint name.
    public func endpointName(method: String, path: String) -> String? {
        Self.endpointName(method: method, path: path, routes: routes)
    }

    static func endpointName(method: String, path: String, routes: [Route]) -> String? {
        templatedName(method: method, path: path, routes: routes)?.name
    }

    static func templatedName(method: String, path: String, routes: [Route]) -> EndpointNaming.TemplatedName? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        for route in routes where route.methods.isEmpty || route.methods.contains(method) {
            guard route.segments.count == segments.count else { continue }
            var bound: [String: Substring] = [:]
            let matches = zip(route.segments, segments).allSatisfy { pattern, segment in
                switch pattern {
                case .literal(let text): return text == segment
                case .parameter(let name):
                    bound[name] = segment
                    return true
                }
            }
            guard matches else { continue }
            var name = route.endpoint
            var overflow = route.endpoint
            for (parameter, value) in bound {
                name = name.replacingOccurrences(of: "{\(parameter)}", with: value)
                overflow = overflow.replacingOccurrences(of: "{\(parameter)}", with: "other")
            }
            return EndpointNaming.TemplatedName(name, template: route.endpoint, overflow: overflow)
        }
        return nil
    }

    /// What the gate follows for this API: the cost table and buckets, throttles, circuit and retry
    /// policies, and the secret names added to the built-in ones.
    /// - Parameter base: The configuration to fill in (cache limits, the redirect policy and the
    ///   ledger-failure policy are kept from it).
    /// - Returns: The configuration.
    /// - Throws: ``APIDescriptionError`` for a "quota spent" rule whose field is not a field name.
    public func gateConfiguration(base: GateConfiguration = GateConfiguration()) throws(APIDescriptionError) -> GateConfiguration {
        func invalid(_ key: String, _ message: String) -> APIDescriptionError {
            APIDescriptionError(file: name, line: nil, column: nil, key: key, message: message)
        }
        var configuration = base
        if !quotaExhausted.isEmpty {
            var rules: [QuotaExhaustionRule] = []
            for (index, rule) in quotaExhausted.enumerated() {
                var field: (name: HTTPField.Name, value: String)?
                if let header = rule.header {
                    guard let name = HTTPField.Name(header.name) else {
                        throw invalid("quota_exhausted[\(index)].header", "'\(header.name)' is not a field name")
                    }
                    field = (name, header.value)
                }
                rules.append(QuotaExhaustionRule(status: rule.status, field: field, reason: rule.reason))
            }
            // In one order whatever the file's, so equal rules make equal configurations.
            configuration.quotaExhaustedAnswers = rules.sorted {
                ($0.status, $0.fieldName?.canonicalName ?? "", $0.fieldValue ?? "", $0.reason ?? "")
                    < ($1.status, $1.fieldName?.canonicalName ?? "", $1.fieldValue ?? "", $1.reason ?? "")
            }
        }
        var costs: [String: QuotaConfiguration.EndpointCost] = [:]
        for (endpoint, rules) in endpoints {
            let notModified = rules.notModifiedCost ?? defaults.notModifiedCost
            if let charges = rules.charges, let first = charges.first {
                costs[endpoint] = .init(bucket: first.bucket, units: first.units, notModifiedCost: notModified,
                                        additionalCharges: Array(charges.dropFirst()), actualCost: rules.actualCost)
            } else if rules.cost != nil || rules.bucket != nil || rules.notModifiedCost != nil || rules.actualCost != nil {
                costs[endpoint] = .init(bucket: rules.bucket ?? defaults.bucket, units: rules.cost ?? defaults.cost,
                                        notModifiedCost: notModified, actualCost: rules.actualCost)
            }
        }
        configuration.quota = QuotaConfiguration(
            bucketLimits: buckets.mapValues(\.limit), endpointCosts: costs, defaultBucket: defaults.bucket,
            defaultCost: defaults.cost, notModifiedCostByDefault: defaults.notModifiedCost,
            warningPercents: base.quota.warningPercents
        )
        // The routes name endpoints the file need not list: they cost the defaults, by design.
        configuration.quota.chargesUnlistedEndpointsTheDefault = true
        configuration.quota.bucketWindows = buckets.filter { !$0.value.window.isPacificDay }.mapValues(\.window)
        configuration.quota.bucketPacing = buckets.compactMapValues(\.pacing)
        configuration.quota.announcedLimits = buckets.compactMapValues(\.announced)
        configuration.throttle = ThrottleConfiguration(
            defaultLimit: defaults.throttle, endpointLimits: endpoints.compactMapValues(\.throttle)
        )
        configuration.circuit.defaultPolicy = defaults.circuit
        configuration.circuit.endpointPolicies = endpoints.compactMapValues(\.circuit)
        configuration.retry = defaults.retry
        configuration.endpointRetries = endpoints.compactMapValues(\.retry)
        configuration.batching = endpoints.compactMapValues(\.batch)
        configuration.freshFor = defaults.freshFor
        configuration.endpointFreshFor = endpoints.compactMapValues(\.freshFor)
        configuration.cache.sensitiveQueryParameters.formUnion(secrets.parameters)
        configuration.cache.sensitiveHeaders.formUnion(secrets.headers.compactMap { HTTPField.Name($0) })
        try validate(configuration, invalid: invalid)
        return configuration
    }

    /// What the gate itself refuses, refused here, so that `tollgate api check` passes nothing the
    /// gate or its store would refuse later: endpoint names the ledger reserves or cannot hold,
    /// the cost table, throttles that admit nothing in no time, circuit policies.
    private func validate(
        _ configuration: GateConfiguration, invalid: (String, String) -> APIDescriptionError
    ) throws(APIDescriptionError) {
        let named = Set(endpoints.keys).union(routes.map(\.endpoint))
        for endpoint in named.sorted() {
            do {
                try QuotaRules.validateEndpoint(endpoint)
            } catch {
                throw invalid("endpoints.\(endpoint)", error.description)
            }
            guard endpoint.utf8.count <= EndpointNameBudget.maximumNameBytes else {
                throw invalid("endpoints.\(endpoint)",
                              "an endpoint name is at most \(EndpointNameBudget.maximumNameBytes) bytes")
            }
        }
        do {
            try configuration.quota.validate()
        } catch {
            throw invalid("endpoints", error.description)
        }
        do {
            try configuration.throttle.validate()
        } catch {
            throw invalid("throttle", error.description)
        }
        for (endpoint, policy) in [("defaults", configuration.circuit.defaultPolicy)]
            + configuration.circuit.endpointPolicies.sorted(by: { $0.key < $1.key }) {
            do {
                try policy.validate()
            } catch {
                throw invalid("\(endpoint == "defaults" ? "defaults" : "endpoints.\(endpoint)").circuit", "\(error)")
            }
        }
    }
}
