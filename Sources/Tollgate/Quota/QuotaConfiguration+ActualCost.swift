import Foundation
import HTTPTypes

extension QuotaConfiguration {
    /// Where a call's actual cost is read from its answer.
    ///
    /// ```swift
    /// // An LLM API: 1 request in "requests", an estimate of 1,000 tokens in "tokens",
    /// // settled at the answer's usage.total_tokens.
    /// configuration.endpointCosts["chat.completions"] = .init(
    ///     bucket: "requests", units: 1,
    ///     additionalCharges: [.init(bucket: "tokens", units: 1_000)],
    ///     actualCost: .init(bucket: "tokens", source: .jsonBody(path: ["usage", "total_tokens"])))
    /// ```
    public struct ActualCost: Sendable, Hashable {
        /// Where the number is.
        public enum Source: Sendable, Hashable, CustomStringConvertible {
            /// A whole number at a path of keys in a JSON body, such as `usage.total_tokens`.
            case jsonBody(path: [String])
            /// The sum of the whole numbers at several paths of a JSON body, such as Anthropic's
            /// `usage.input_tokens + usage.output_tokens`. In server-sent events each path's last
            /// report counts, at the event's top level or in its `message` (Anthropic's
            /// `message_start` carries the input tokens there, `message_delta` the output tokens).
            case jsonBodySum(paths: [[String]])
            /// A whole number in a response field, such as `x-usage-tokens`.
            case header(HTTPField.Name)

            public var description: String {
                switch self {
                case .jsonBody(let path): "body \(path.joined(separator: "."))"
                case .jsonBodySum(let paths): "body " + paths.map { $0.joined(separator: ".") }.joined(separator: " + ")
                case .header(let name): "header \(name.canonicalName)"
                }
            }
        }

        /// The bucket whose charge is settled: the endpoint's own bucket when nil.
        public var bucket: String?
        /// Where the actual cost is read.
        public var source: Source

        /// Creates a rule.
        /// - Parameters:
        ///   - bucket: The bucket whose charge is settled; the endpoint's own when nil.
        ///   - source: Where the actual cost is read.
        public init(bucket: String? = nil, source: Source) {
            self.bucket = bucket
            self.source = source
        }

        /// The actual cost in an answer, or nil when the answer does not say (the estimate stands).
        ///
        /// A compressed body (`Content-Encoding: gzip`, `deflate`, `br`) is decoded first, up to
        /// ``ContentDecoding/defaultLimit``. A number past ``QuotaLimits/maximumUnits`` reads as
        /// that maximum (the gate settles it at the bucket's limit), never as a failure.
        /// - Parameters:
        ///   - fields: The answer's fields.
        ///   - body: The answer's body, when it was read whole.
        /// - Returns: The cost, zero or more.
        public func read(from fields: HTTPFields, body: Data?) -> Int? {
            let number: Int?
            switch source {
            case .header(let name):
                number = fields[name].flatMap { Self.wholeNumber($0.trimmingCharacters(in: .whitespaces)) }
            case .jsonBody(let path):
                guard let body, !body.isEmpty, let decoded = ContentDecoding.decoded(body, fields: fields),
                      var node = try? JSONDecoder().decode(JSONNode.self, from: decoded) else {
                    return nil
                }
                for key in path {
                    guard case .object(let members) = node, let next = members[key] else { return nil }
                    node = next
                }
                guard case .integer(let value) = node else { return nil }
                number = value
            case .jsonBodySum(let paths):
                // Every path must tell its part: a sum with a part missing is not the cost.
                var sum = 0
                for path in paths {
                    guard let part = ActualCost(source: .jsonBody(path: path)).read(from: fields, body: body) else { return nil }
                    sum += part
                }
                number = sum
            }
            guard let number, number >= 0 else { return nil }
            return min(number, QuotaLimits.maximumUnits)
        }

        /// A whole number of digits, saturating at `Int.max` rather than failing on a long one.
        private static func wholeNumber(_ text: String) -> Int? {
            guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                return Int(text)
            }
            return Int(text) ?? .max
        }

        /// Just enough of JSON to walk a path of keys to a whole number.
        private enum JSONNode: Decodable {
            case object([String: JSONNode])
            case integer(Int)
            case other

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                // Int refuses true, false and 12.5: only a whole number is a cost. One too large
                // for Int (a hostile 1e30 written out) reads as the largest.
                if let integer = try? container.decode(Int.self) {
                    self = .integer(integer)
                } else if let large = try? container.decode(Double.self), large >= 9.2e18, large == large.rounded() {
                    self = .integer(.max)
                } else if let members = try? container.decode([String: JSONNode].self) {
                    self = .object(members)
                } else {
                    self = .other
                }
            }
        }
    }

    /// Which of the limits a server announces a bucket follows: the one with this name (GitHub's
    /// `X-RateLimit-Resource`, an IETF policy's name), counting this unit.
    public struct AnnouncedLimitSelector: Sendable, Hashable {
        /// The server's name for the limit; nil takes the first limit of ``unit``, named or not.
        public var policy: String?
        /// What the limit counts.
        public var unit: AnnouncedLimit.Unit

        /// Creates a selector.
        /// - Parameters:
        ///   - policy: The server's name for the limit, if it must match.
        ///   - unit: What the limit counts; requests by default.
        public init(policy: String? = nil, unit: AnnouncedLimit.Unit = .requests) {
            self.policy = policy
            self.unit = unit
        }

        /// The announced limit this selector picks, if the answer carries one.
        /// - Parameter limits: What the answer announced.
        /// - Returns: The first that matches.
        public func select(from limits: [AnnouncedLimit]) -> AnnouncedLimit? {
            limits.first { limit in
                limit.unit == unit && (policy == nil || limit.policy?.lowercased() == policy?.lowercased())
            }
        }
    }
}
