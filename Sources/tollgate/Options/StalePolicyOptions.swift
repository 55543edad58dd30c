import ArgumentParser
import Tollgate

/// `--stale-despite-directives`: serve stored answers stale on errors even when they say
/// `must-revalidate` or `no-cache`, as YouTube's every answer does.
struct StalePolicyOptions: ParsableArguments {
    @Flag(help: ArgumentHelp(
        "When the quota is spent, the circuit open or the server down, serve the stored answer even if it says "
            + "must-revalidate or no-cache (YouTube says so on every answer). A deliberate departure from RFC 9111 §4.2.4."
    ))
    var staleDespiteDirectives = false

    /// `configuration` with the choice applied.
    func applied(to configuration: GateConfiguration) -> GateConfiguration {
        var configuration = configuration
        if staleDespiteDirectives { configuration.cache.servesStaleAgainstDirectives = true }
        return configuration
    }
}
