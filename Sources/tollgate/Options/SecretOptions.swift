import ArgumentParser
import HTTPTypes
import Tollgate

/// `--secret-param` and `--secret-header`: more names whose values the cache redacts and hashes
/// into the credential partition, on top of the library's generous defaults.
struct SecretOptions: ParsableArguments {
    @Option(name: .customLong("secret-param"), help: ArgumentHelp(
        "A query or path parameter whose value is a secret, such as 'session_key' or 'x-*-sig' (* matches any run). Repeatable.",
        valueName: "name"
    ))
    var parameters: [String] = []

    @Option(name: .customLong("secret-header"), help: ArgumentHelp(
        "A request header that carries identity, such as 'X-Customer' or 'X-Org-*' (* matches any run). Repeatable.",
        valueName: "name"
    ))
    var headers: [String] = []

    func validate() throws {
        for name in parameters + headers where name.isEmpty || name.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } ?? false }) {
            throw ValidationError("--secret-param and --secret-header need a name without spaces, not '\(name)'.")
        }
        for name in headers where HTTPField.Name(name.replacingOccurrences(of: "*", with: "x")) == nil {
            throw ValidationError("--secret-header '\(name)' is not a header field name.")
        }
    }

    /// `configuration` with these names added to the cache's secret rules.
    func applied(to configuration: GateConfiguration) -> GateConfiguration {
        var configuration = configuration
        configuration.cache.sensitiveQueryParameterPatterns += parameters.map { SecretNamePattern($0) }
        configuration.cache.sensitiveHeaderPatterns += headers.map { SecretNamePattern($0) }
        return configuration
    }
}
