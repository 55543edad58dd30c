import AsyncHTTPClient
import Foundation
import NIOSSL

/// The certificate authorities a client trusts instead of the system's, for an API behind a
/// private CA, chosen as curl and OpenSSL choose them:
///
/// | Given | Trusted |
/// |---|---|
/// | `--cacert FILE` | the PEM certificates in `FILE`, and nothing else (curl's `--cacert`) |
/// | `SSL_CERT_FILE` and/or `SSL_CERT_DIR` (no `--cacert`) | the file's certificates and the directory's (hashed as `openssl rehash` does), and nothing else |
/// | none of them | the system's authorities |
///
/// A file is read when the value is made, so a path that is missing or holds no certificate is
/// an error at once, not a handshake failure later.
///
/// ```swift
/// let authorities = try CertificateAuthorities(file: "/etc/tollgate/private-ca.pem")
/// let client = AsyncHTTPClientTransport.makeClient(trusting: authorities)
/// let gate = try Gate(store: store, transport: AsyncHTTPClientTransport(client: client))
/// // …
/// try await client.shutdown()
/// ```
public struct CertificateAuthorities: Sendable, Hashable {
    /// Where they came from, such as `--cacert '/etc/ca.pem'`: for messages.
    public let origin: String
    private let trustRoots: NIOSSLTrustRoots
    private let additionalTrustRoots: [NIOSSLAdditionalTrustRoots]

    /// The authorities in a PEM file (one or more certificates).
    /// - Parameters:
    ///   - path: The file.
    ///   - source: What named it, for errors: `--cacert` by default, or `SSL_CERT_FILE`.
    /// - Throws: ``CertificateAuthorityError/unreadable(source:path:reason:)`` or
    ///   ``CertificateAuthorityError/noCertificates(source:path:)``.
    public init(file path: String, source: String = "--cacert") throws(CertificateAuthorityError) {
        trustRoots = .certificates(try Self.certificates(inFile: path, source: source))
        additionalTrustRoots = []
        origin = "\(source) '\(path)'"
    }

    /// The authorities in a directory of PEM files named by their subject hash (`openssl rehash`,
    /// `c_rehash`), as OpenSSL reads `SSL_CERT_DIR`.
    /// - Parameters:
    ///   - path: The directory.
    ///   - source: What named it, for errors: `SSL_CERT_DIR` by default.
    /// - Throws: ``CertificateAuthorityError/notADirectory(source:path:)``.
    public init(directory path: String, source: String = "SSL_CERT_DIR") throws(CertificateAuthorityError) {
        try Self.checkDirectory(path, source: source)
        trustRoots = .file(path)
        additionalTrustRoots = []
        origin = "\(source) '\(path)'"
    }

    private init(file: String, directory: String) throws(CertificateAuthorityError) {
        // NIOSSL reads a directory only as the trust roots (additional roots must be files).
        let certificates = try Self.certificates(inFile: file, source: "SSL_CERT_FILE")
        try Self.checkDirectory(directory, source: "SSL_CERT_DIR")
        trustRoots = .file(directory)
        additionalTrustRoots = [.certificates(certificates)]
        origin = "SSL_CERT_FILE '\(file)' and SSL_CERT_DIR '\(directory)'"
    }

    /// The authorities a command trusts: `caFile` when given (`--cacert`), else `SSL_CERT_FILE`
    /// and `SSL_CERT_DIR` from `environment` (an empty value counts as unset), else nil for the
    /// system's.
    /// - Parameters:
    ///   - caFile: The `--cacert` argument, if any.
    ///   - environment: The process's environment.
    /// - Returns: The authorities, or nil to trust the system's.
    /// - Throws: ``CertificateAuthorityError`` naming the option or variable whose path cannot be used.
    public static func resolve(
        caFile: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CertificateAuthorityError) -> CertificateAuthorities? {
        if let caFile { return try CertificateAuthorities(file: caFile) }
        let file = environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        let directory = environment["SSL_CERT_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        switch (file, directory) {
        case let (file?, directory?): return try CertificateAuthorities(file: file, directory: directory)
        case let (file?, nil): return try CertificateAuthorities(file: file, source: "SSL_CERT_FILE")
        case let (nil, directory?): return try CertificateAuthorities(directory: directory)
        case (nil, nil): return nil
        }
    }

    /// `configuration` with these authorities trusted instead of the system's, its other TLS
    /// settings (if any) kept.
    /// - Parameter configuration: A client configuration, such as
    ///   ``AsyncHTTPClientTransport/recommendedConfiguration``.
    /// - Returns: The changed configuration.
    public func applied(to configuration: HTTPClient.Configuration) -> HTTPClient.Configuration {
        var configuration = configuration
        var tls = configuration.tlsConfiguration ?? TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = trustRoots
        tls.additionalTrustRoots = additionalTrustRoots
        configuration.tlsConfiguration = tls
        return configuration
    }

    private static func certificates(inFile path: String, source: String) throws(CertificateAuthorityError) -> [NIOSSLCertificate] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .unreadable(source: source, path: path, reason: "no such file")
        }
        guard !isDirectory.boolValue else { throw .unreadable(source: source, path: path, reason: "it is a directory") }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw .unreadable(source: source, path: path, reason: "permission denied")
        }
        guard let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(contents)), !certificates.isEmpty else {
            throw .noCertificates(source: source, path: path)
        }
        return certificates
    }

    private static func checkDirectory(_ path: String, source: String) throws(CertificateAuthorityError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .notADirectory(source: source, path: path)
        }
    }
}
