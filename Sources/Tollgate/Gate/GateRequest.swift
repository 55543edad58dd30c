import Foundation
import HTTPTypes
import Logging

/// One request on its way through the gate — one hop of a redirect chain, or the gate's own
/// resend or background revalidation of it — with everything its steps need, so they take one
/// value instead of the same endpoint, options, transport and logger each.
struct GateRequest: Sendable {
    /// The request as the caller (or the redirect chain) gave it; without the caller's own
    /// conditions once the lookup left them to the caller (``GateRequestOptions/answersConditionalsFromStore``).
    var request: HTTPRequest
    /// Its body.
    let body: Data?
    /// The caller's choices for it.
    let options: GateRequestOptions
    /// How it reaches the network.
    let transport: any HTTPTransport
    /// How a stale response within its `stale-while-revalidate` window is revalidated.
    let revalidation: Gate.Revalidation
    /// The endpoint, its logger and the running totals: the part the writes after the answer
    /// keep (never the transport, which may be the caller's for this call only).
    var account: Account
    /// For the gate's call that carries a batch of single-ID requests: how many IDs it carries
    /// (kept in its charge's detail). Such a call's answer is not stored: its members' parts are.
    var batchedIDs: Int?
    /// The freshness lifetime chosen for it (``Gate/chosenFreshness(for:)``), resolved at its lookup.
    var freshFor: Duration?

    /// The endpoint it is counted and charged under (already free of secrets).
    var endpoint: String { account.endpoint }
    /// The endpoint's logger; the gate's own until the request is past the cache.
    var logger: Logger {
        get { account.logger }
        set { account.logger = newValue }
    }
    /// What its attempts charged and how many were sent, so far: the caller's to report even
    /// when the request ends in an error.
    var totals: Totals {
        get { account.totals }
        set { account.totals = newValue }
    }

    /// Creates a request's context.
    init(request: HTTPRequest, body: Data?, endpoint: String, options: GateRequestOptions,
         transport: any HTTPTransport, revalidation: Gate.Revalidation, logger: Logger) {
        self.request = request
        self.body = body
        self.options = options
        self.transport = transport
        self.revalidation = revalidation
        self.account = Account(endpoint: endpoint, logger: logger)
    }

    /// Where a request's charges, refunds and log lines go.
    struct Account: Sendable {
        /// The endpoint.
        let endpoint: String
        /// The endpoint's logger.
        var logger: Logger
        /// Units and attempts so far.
        var totals = Totals()
    }

    /// What happened over one request's attempts.
    struct Totals: Sendable {
        /// Quota units charged, net of refunds.
        var unitsCharged = 0
        /// Requests sent to the server.
        var attempts = 0
        /// When the bucket the server said is spent opens again: the end of that bucket's own
        /// window (an hour, GitHub's announced reset…), not always the Pacific midnight.
        var quotaSpentUntil: Date?
        /// Counts a charge.
        mutating func charged(_ units: Int) { unitsCharged += units }
        /// Counts a refund.
        mutating func refunded(_ units: Int) { unitsCharged -= units }
    }

    /// A GET or HEAD with a body: the cache key cannot see the body, so such a request is neither
    /// answered from the cache nor stored (RFC 9110 §9.3.1 gives the body no meaning; some APIs
    /// search with it all the same).
    var isSafeWithBody: Bool { Self.isSafeWithBody(request, body) }

    /// Whether `request` is a GET or HEAD with a body (see ``isSafeWithBody``).
    static func isSafeWithBody(_ request: HTTPRequest, _ body: Data?) -> Bool {
        guard let body, !body.isEmpty else { return false }
        return request.method == .get || request.method == .head
    }

    /// The same request sent again by the gate (an unconditional resend, a background
    /// revalidation), with totals of its own.
    func again(revalidation: Gate.Revalidation, body: Data?) -> GateRequest {
        GateRequest(request: request, body: body, endpoint: endpoint, options: options, transport: transport,
                    revalidation: revalidation, logger: logger)
    }
}
