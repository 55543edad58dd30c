import Foundation
import HTTPTypes

/// The redirect decisions of one ``Gate/send(_:body:endpoint:options:via:)``: which hop comes
/// next, and when the chain ends. A value with no I/O; ``RedirectHop`` works out each hop.
///
/// A same-origin redirect is followed up to the policy's hops; a cross-origin one only when the
/// policy says so, and then that hop and every later one carry no credential and are charged
/// nothing, under an endpoint of their own (`redirect HOST`). A hop back to a request already made
/// in the send is a loop: the redirect is returned as it is.
struct RedirectChain {
    /// What to do with an answer.
    enum Action: Sendable, Hashable {
        /// Send this hop through the gate.
        case follow(RedirectHop)
        /// Return the answer; `loop` when it is a redirect back to a request already made.
        case deliver(loop: Bool)
    }

    /// The hop being sent.
    private(set) var hop: RedirectHop
    /// The URLs followed so far, in order.
    private(set) var redirects: [URL] = []
    /// Every request made in this send, so a redirect back to one of them ends the chain.
    private var visited: Set<String>
    private let policy: RedirectPolicy
    private let secrets: CacheKey.SecretRules

    /// Starts the chain at the caller's request.
    /// - Parameters:
    ///   - request: The caller's request.
    ///   - body: Its body.
    ///   - policy: Which redirects to follow.
    ///   - secrets: Which header fields and parameters are credentials.
    init(request: HTTPRequest, body: Data?, policy: RedirectPolicy, secrets: CacheKey.SecretRules) {
        hop = RedirectHop(request: request, body: body, crossedOrigin: false)
        visited = [RedirectHop.visit(request)]
        self.policy = policy
        self.secrets = secrets
    }

    /// The endpoint the current hop is counted under: the caller's, or `redirect HOST` for a hop
    /// that left the origin (the host alone: an authority's user information is a credential).
    /// - Parameter endpoint: The caller's endpoint.
    func endpoint(for endpoint: String) -> String {
        hop.crossedOrigin ? "redirect \(Self.hostAndPort(of: hop.request.authority ?? ""))" : endpoint
    }

    /// The options for the current hop: a hop to another origin is not the endpoint's call, so
    /// nothing is charged for it.
    /// - Parameter options: The caller's options.
    func options(for options: GateRequestOptions) -> GateRequestOptions {
        guard hop.crossedOrigin else { return options }
        var hopOptions = options
        hopOptions.cost = 0
        return hopOptions
    }

    /// The current hop was answered with `response`.
    /// - Parameter response: The answer.
    mutating func answered(_ response: HTTPResponse) -> Action {
        guard let next = RedirectHop.next(
            after: response, to: hop.request, body: hop.body, hopsSoFar: redirects.count,
            alreadyCrossed: hop.crossedOrigin, policy: policy, secrets: secrets
        ) else { return .deliver(loop: false) }
        guard visited.insert(RedirectHop.visit(next.request)).inserted else {
            // Back to a request already made in this send: the same answer again, at a price.
            return .deliver(loop: true)
        }
        if let url = next.request.url { redirects.append(url) }
        hop = next
        return .follow(next)
    }

    /// An authority without its user information (`user:password@`), which is a credential.
    static func hostAndPort(of authority: String) -> Substring {
        guard let at = authority.lastIndex(of: "@") else { return authority[...] }
        return authority[authority.index(after: at)...]
    }
}
