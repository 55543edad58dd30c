import Foundation
import HTTPTypes

/// An answer that says a bucket's quota is spent: its status, and a field with a value or an
/// error reason in its body when the status alone does not say so.
///
/// When an answer matches, the gate closes every bucket its endpoint is charged in until the
/// bucket's window ends (the next Pacific midnight for YouTube; the reset the server announced for
/// GitHub), hands the caller `quotaExceeded`, and counts the answer as neutral for the circuit.
///
/// ```swift
/// configuration.quotaExhaustedAnswers = QuotaExhaustionRule.google + [
///     QuotaExhaustionRule(status: 403, field: (.init("X-RateLimit-Remaining")!, "0")),   // GitHub
/// ]
/// ```
public struct QuotaExhaustionRule: Sendable, Hashable {
    /// The status the answer has.
    public var status: Int
    /// A field the answer carries, when the rule asks for one.
    public var fieldName: HTTPField.Name?
    /// The value that field has (surrounding spaces ignored).
    public var fieldValue: String?
    /// An error reason the body names (Google's `error.errors[].reason`), when the rule asks for one.
    public var reason: String?

    /// Creates a rule.
    /// - Parameters:
    ///   - status: The status the answer has.
    ///   - field: A field it carries, with this value.
    ///   - reason: An error reason its body names, Google's way.
    public init(status: Int, field: (name: HTTPField.Name, value: String)? = nil, reason: String? = nil) {
        self.status = status
        self.fieldName = field?.name
        self.fieldValue = field?.value
        self.reason = reason
    }

    /// Google's answers that say a daily quota is spent: `403` with `quotaExceeded` or
    /// `dailyLimitExceeded`. The gate's default.
    public static let google: [QuotaExhaustionRule] = GoogleErrorReasons.dailyQuotaSpent.sorted().map {
        QuotaExhaustionRule(status: 403, reason: $0)
    }

    /// Whether an answer matches.
    /// - Parameters:
    ///   - status: Its status.
    ///   - fields: Its fields.
    ///   - reasons: The error reasons its body names.
    /// - Returns: True when every part of the rule holds.
    public func matches(status: Int, fields: HTTPFields, reasons: [String]) -> Bool {
        guard status == self.status else { return false }
        if let fieldName, fields[fieldName]?.trimmingCharacters(in: .whitespaces) != fieldValue { return false }
        if let reason, !reasons.contains(reason) { return false }
        return true
    }
}
