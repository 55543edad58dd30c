import Foundation
import HTTPTypes
import Testing
@testable import Tollgate

/// The redirect decisions of one send, asserted as actions compared whole: no network, no store.
@Suite("The gate's redirect chain")
struct RedirectChainTests {
    static let secrets = CacheKey.SecretRules(CacheConfiguration())

    static func request(_ url: String) -> HTTPRequest {
        var request = HTTPRequest(url: URL(string: url)!)
        request.headerFields[.authorization] = "Bearer secret-token"
        return request
    }

    static func redirect(_ status: Int, to location: String) -> HTTPResponse {
        var response = HTTPResponse(status: .init(code: status))
        response.headerFields[.location] = location
        return response
    }

    /// Following a hop to `url` (the caller's credentials with it unless it crossed origins).
    static func follow(_ url: String, credentials: Bool = true, crossed: Bool = false) -> RedirectChain.Action {
        .follow(RedirectHop(request: credentials ? request(url) : HTTPRequest(url: URL(string: url)!), body: nil,
                            crossedOrigin: crossed))
    }

    @Test("a same-origin redirect is followed, under the caller's endpoint and price, credentials kept")
    func sameOrigin() {
        var chain = RedirectChain(request: Self.request("https://api.example/a"), body: nil, policy: .sameOrigin,
                                  secrets: Self.secrets)
        #expect(chain.answered(Self.redirect(302, to: "/b")) == Self.follow("https://api.example/b"))
        #expect(chain.endpoint(for: "videos.list") == "videos.list")
        #expect(chain.options(for: GateRequestOptions(cost: 3)).cost == 3)
        #expect(chain.hop.request.headerFields[.authorization] == "Bearer secret-token")
        #expect(chain.redirects.map(\.absoluteString) == ["https://api.example/b"])
    }

    @Test("a cross-origin redirect is returned as it is by default")
    func crossOriginReturned() {
        var chain = RedirectChain(request: Self.request("https://api.example/a"), body: nil, policy: .sameOrigin,
                                  secrets: Self.secrets)
        #expect(chain.answered(Self.redirect(302, to: "https://elsewhere.example/b")) == .deliver(loop: false))
        #expect(chain.redirects.isEmpty)
    }

    @Test("a cross-origin redirect followed when asked carries no credential, costs nothing and counts under the host")
    func crossOriginFollowed() {
        var chain = RedirectChain(request: Self.request("https://api.example/a?key=AIza-secret&q=1"), body: nil,
                                  policy: .stripCredentialsAcrossOrigins, secrets: Self.secrets)
        #expect(chain.answered(Self.redirect(307, to: "https://user:pw@elsewhere.example:8443/b?key=AIza-secret&q=1"))
            == Self.follow("https://elsewhere.example:8443/b?q=1", credentials: false, crossed: true))
        #expect(chain.hop.request.headerFields[.authorization] == nil)
        #expect(chain.endpoint(for: "videos.list") == "redirect elsewhere.example:8443")
        #expect(chain.options(for: GateRequestOptions(cost: 3)).cost == 0)
    }

    @Test("a redirect back to a request already made ends the chain")
    func loop() {
        var chain = RedirectChain(request: Self.request("https://api.example/a"), body: nil, policy: .sameOrigin,
                                  secrets: Self.secrets)
        #expect(chain.answered(Self.redirect(302, to: "/b")) == Self.follow("https://api.example/b"))
        #expect(chain.answered(Self.redirect(302, to: "/a")) == .deliver(loop: true))
    }

    @Test("past the policy's hops the last redirect is returned as it is")
    func maximumHops() {
        var chain = RedirectChain(request: Self.request("https://api.example/0"), body: nil,
                                  policy: RedirectPolicy(maximumRedirects: 2), secrets: Self.secrets)
        #expect(chain.answered(Self.redirect(302, to: "/1")) == Self.follow("https://api.example/1"))
        #expect(chain.answered(Self.redirect(302, to: "/2")) == Self.follow("https://api.example/2"))
        #expect(chain.answered(Self.redirect(302, to: "/3")) == .deliver(loop: false))
    }

    @Test("an answer that is not a redirect ends the chain")
    func notARedirect() {
        var chain = RedirectChain(request: Self.request("https://api.example/a"), body: nil, policy: .sameOrigin,
                                  secrets: Self.secrets)
        #expect(chain.answered(HTTPResponse(status: .ok)) == .deliver(loop: false))
    }
}
