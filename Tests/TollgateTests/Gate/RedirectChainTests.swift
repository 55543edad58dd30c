import Foundation
import HTTPTypes
import Testing
@testable import Tollgate

/// The redirect decisions of one send, asserted as actions: no network, no store.
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

    static func describe(_ action: RedirectChain.Action) -> String {
        switch action {
        case .follow(let hop): "follow \(hop.request.url?.absoluteString ?? "?")" + (hop.crossedOrigin ? " crossed" : "")
        case .deliver(let loop): loop ? "deliver loop" : "deliver"
        }
    }

    @Test("a same-origin redirect is followed, under the caller's endpoint and price, credentials kept")
    func sameOrigin() {
        var chain = RedirectChain(request: Self.request("https://api.example/a"), body: nil, policy: .sameOrigin,
                                  secrets: Self.secrets)
        #expect(Self.describe(chain.answered(Self.redirect(302, to: "/b"))) == "follow https://api.example/b")
        #expect(chain.endpoint(for: "videos.list") == "videos.list")
        #expect(chain.options(for: GateRequestOptions(cost: 3)).cost == 3)
        #expect(chain.hop.request.headerFields[.authorization] == "Bearer secret-token")
        #expect(chain.redirects.map(\.absoluteString) == ["https://api.example/b"])
    }

    @Test("a cross-origin redirect is returned as it is by default")
    func crossOriginReturned() {
        var chain = RedirectChain(request: Self.request("https://api.example/a"), body: nil, policy: .sameOrigin,
                                  secrets: Self.secrets)
        #expect(Self.describe(chain.answered(Self.redirect(302, to: "https://elsewhere.example/b"))) == "deliver")
        #expect(chain.redirects.isEmpty)
    }

    @Test("a cross-origin redirect followed when asked carries no credential, costs nothing and counts under the host")
    func crossOriginFollowed() {
        var chain = RedirectChain(request: Self.request("https://api.example/a?key=AIza-secret&q=1"), body: nil,
                                  policy: .stripCredentialsAcrossOrigins, secrets: Self.secrets)
        #expect(Self.describe(chain.answered(Self.redirect(307, to: "https://user:pw@elsewhere.example:8443/b?key=AIza-secret&q=1")))
            == "follow https://elsewhere.example:8443/b?q=1 crossed")
        #expect(chain.hop.request.headerFields[.authorization] == nil)
        #expect(chain.endpoint(for: "videos.list") == "redirect elsewhere.example:8443")
        #expect(chain.options(for: GateRequestOptions(cost: 3)).cost == 0)
    }

    @Test("a redirect back to a request already made ends the chain")
    func loop() {
        var chain = RedirectChain(request: Self.request("https://api.example/a"), body: nil, policy: .sameOrigin,
                                  secrets: Self.secrets)
        #expect(Self.describe(chain.answered(Self.redirect(302, to: "/b"))) == "follow https://api.example/b")
        #expect(Self.describe(chain.answered(Self.redirect(302, to: "/a"))) == "deliver loop")
    }

    @Test("past the policy's hops the last redirect is returned as it is")
    func maximumHops() {
        var chain = RedirectChain(request: Self.request("https://api.example/0"), body: nil,
                                  policy: RedirectPolicy(maximumRedirects: 2), secrets: Self.secrets)
        #expect(Self.describe(chain.answered(Self.redirect(302, to: "/1"))) == "follow https://api.example/1")
        #expect(Self.describe(chain.answered(Self.redirect(302, to: "/2"))) == "follow https://api.example/2")
        #expect(Self.describe(chain.answered(Self.redirect(302, to: "/3"))) == "deliver")
    }

    @Test("an answer that is not a redirect ends the chain")
    func notARedirect() {
        var chain = RedirectChain(request: Self.request("https://api.example/a"), body: nil, policy: .sameOrigin,
                                  secrets: Self.secrets)
        #expect(Self.describe(chain.answered(HTTPResponse(status: .ok))) == "deliver")
    }
}
