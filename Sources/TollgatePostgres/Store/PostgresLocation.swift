import Foundation
import TollgateCore

/// Where a ``PostgresStore`` connects: a server, a user and a database, read from a
/// `postgresql://` (or `postgres://`) URL as `psql` reads it.
///
/// Its ``description`` names `host:port/database` and never the password, so it can be logged and
/// put in error messages.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    /// Whether the connection is encrypted, from the URL's `sslmode`.
    public enum TLSMode: String, Sendable, Hashable {
        /// Plain TCP (`sslmode=disable`): the default, for a loopback or private network.
        case disable
        /// TLS when the server offers it, plain TCP otherwise (`sslmode=prefer`).
        case prefer
        /// TLS or no connection (`sslmode=require`); the server's certificate is verified.
        case require
    }

    /// The server's host name or address.
    public var host: String
    /// The server's TCP port; 5432 when the URL names none.
    public var port: Int
    /// The user to connect as; `postgres` when the URL names none.
    public var username: String
    /// The user's password, if the URL has one.
    public var password: String?
    /// The database; the user's name when the URL names none, as `psql` does.
    public var database: String
    /// Whether the connection is encrypted.
    public var tlsMode: TLSMode

    /// Creates a location from its parts.
    /// - Parameters:
    ///   - host: The server's host name or address.
    ///   - port: Its TCP port.
    ///   - username: The user.
    ///   - password: The user's password, if any.
    ///   - database: The database.
    ///   - tlsMode: Whether to encrypt.
    public init(host: String, port: Int = 5432, username: String, password: String? = nil, database: String,
                tlsMode: TLSMode = .disable) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tlsMode = tlsMode
    }

    /// Reads a location from a URL such as `postgresql://tollgate:secret@db.internal:5432/tollgate`.
    /// - Parameter url: A `postgresql://` or `postgres://` URL, optionally with `?sslmode=`.
    /// - Throws: ``PostgresStoreError/invalidURL(_:reason:)`` for another scheme, a missing host, a
    ///   port out of range or an unknown `sslmode`.
    public init(url: String) throws {
        // The URL itself may hold a password: errors show it with the password masked.
        let shown = Self.masked(url)
        guard let components = URLComponents(string: url) else {
            throw PostgresStoreError.invalidURL(shown, reason: "it cannot be parsed as a URL")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "postgresql" || scheme == "postgres" else {
            throw PostgresStoreError.invalidURL(shown, reason: "the scheme must be postgresql:// or postgres://")
        }
        guard let host = components.host, !host.isEmpty else {
            throw PostgresStoreError.invalidURL(shown, reason: "it names no host")
        }
        let port = components.port ?? 5432
        guard (1...65_535).contains(port) else {
            throw PostgresStoreError.invalidURL(shown, reason: "port \(port) is out of range")
        }
        let username = components.user.flatMap { $0.isEmpty ? nil : $0 } ?? "postgres"
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        var tlsMode = TLSMode.disable
        for item in components.queryItems ?? [] where item.name == "sslmode" {
            guard let value = item.value, let mode = TLSMode(rawValue: value) else {
                throw PostgresStoreError.invalidURL(
                    shown, reason: "sslmode must be disable, prefer or require, not \(item.value ?? "empty")"
                )
            }
            tlsMode = mode
        }
        self.init(
            host: host, port: port, username: username, password: components.password,
            database: path.isEmpty ? username : path, tlsMode: tlsMode
        )
    }

    /// `host:port/database`, as errors and logs name the server.
    public var description: String { "\(host):\(port)/\(database)" }

    /// The URL with its password replaced by `***`. A URL that cannot be parsed (a password with
    /// an unescaped `#`, `/`, `?` or `%` makes one) is shown with everything between `://` and
    /// the last `@` masked, since a password may be anywhere in it.
    static func masked(_ url: String) -> String {
        if var components = URLComponents(string: url), components.host != nil, components.password != nil {
            components.password = "***"
            if let string = components.string { return string }
        }
        guard let start = url.range(of: "://")?.upperBound, let at = url.range(of: "@", options: .backwards),
              at.lowerBound > start, url[start..<at.lowerBound].contains(":")
        else { return url }
        return String(url[..<start]) + "***" + String(url[at.lowerBound...])
    }
}
