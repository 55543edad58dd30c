import Foundation

extension URL {
    /// The URL as text without the `user:password@` it may carry, for a banner, a log line or a
    /// description's summary: credentials are never printed.
    public var absoluteStringWithoutCredentials: String {
        guard user != nil || password != nil, var components = URLComponents(url: self, resolvingAgainstBaseURL: false)
        else { return absoluteString }
        components.user = nil
        components.password = nil
        return components.string ?? absoluteString
    }
}
