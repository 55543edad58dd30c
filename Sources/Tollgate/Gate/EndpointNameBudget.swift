import Crypto
import Foundation
import Logging
import Synchronization

/// Keeps the endpoint names a naming hands out bounded, whatever requests arrive.
///
/// Every endpoint name becomes a circuit, a throttle window, usage rows and metric series. A name
/// template with a parameter (`repos.{collection}.list`), or a fallback that names a request by its
/// path (`GET /any/path`), would make a new name for every value a client cares to send. So each
/// template keeps at most ``valuesPerTemplate`` distinct names; past that every new value folds into
/// the template's one overflow name (`repos.other.list`), logged once per template. Names longer
/// than ``maximumNameBytes`` are cut, keeping a short hash of the whole so two long names stay apart.
///
/// The budget is per process and per naming: a restarted proxy may add another
/// ``valuesPerTemplate`` names to what the file already holds, never more per run.
public final class EndpointNameBudget: Sendable {
    /// The most distinct names one template gives before folding.
    public let valuesPerTemplate: Int
    /// The longest endpoint name, in UTF-8 bytes.
    public static let maximumNameBytes = 200

    private struct Template {
        var names: Set<String> = []
        var folded = false
    }

    private let templates = Mutex<[String: Template]>([:])

    /// Creates a budget.
    /// - Parameter valuesPerTemplate: The most distinct names per template; 100 by default.
    public init(valuesPerTemplate: Int = 100) {
        self.valuesPerTemplate = max(1, valuesPerTemplate)
    }

    /// The name to use for `name`, made from `template`.
    /// - Parameters:
    ///   - name: The name the template gave this request.
    ///   - template: The template, as written (`repos.{collection}.list`); a name that is its own
    ///     template (no parameter) is never folded.
    ///   - overflow: The name every value past the budget folds into.
    ///   - logger: Where the first fold of a template is said.
    /// - Returns: `name` (cut to ``maximumNameBytes``), or `overflow`.
    public func admit(_ name: String, template: String, overflow: String, logger: Logger = Logger.current) -> String {
        let name = Self.capped(name)
        guard name != template else { return name }
        let (kept, firstFold) = templates.withLock { templates -> (Bool, Bool) in
            var entry = templates[template, default: Template()]
            defer { templates[template] = entry }
            if entry.names.contains(name) { return (true, false) }
            if entry.names.count < valuesPerTemplate {
                entry.names.insert(name)
                return (true, false)
            }
            let first = !entry.folded
            entry.folded = true
            return (false, first)
        }
        if kept { return name }
        if firstFold {
            logger.warning(
                "Endpoint template \(template) has given \(valuesPerTemplate) distinct names; further values are counted as \(overflow)",
                metadata: ["gate.endpoint.template": "\(template)"])
        }
        return Self.capped(overflow)
    }

    /// `name` cut to ``maximumNameBytes`` bytes at a character boundary, with a hash of the whole.
    /// - Parameter name: Any name.
    /// - Returns: The name, or its cut form.
    public static func capped(_ name: String) -> String {
        guard name.utf8.count > maximumNameBytes else { return name }
        let digest = SHA256.hash(data: Data(name.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
        let suffix = "~" + digest
        var kept = ""
        var bytes = 0
        for character in name {
            let size = character.utf8.count
            guard bytes + size <= maximumNameBytes - suffix.utf8.count else { break }
            kept.append(character)
            bytes += size
        }
        return kept + suffix
    }
}
