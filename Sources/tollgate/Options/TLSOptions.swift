import ArgumentParser
import Foundation
import TollgateAsyncHTTPClient

/// `--cacert FILE`, and `SSL_CERT_FILE`/`SSL_CERT_DIR` without it: which certificate authorities
/// `get` and `proxy` trust (see ``CertificateAuthorities``).
struct TLSOptions: ParsableArguments {
    @Option(
        name: .customLong("cacert"),
        help: ArgumentHelp(
            "Trust the certificate authorities in this PEM file instead of the system's, as curl --cacert does. "
                + "Without it, SSL_CERT_FILE and SSL_CERT_DIR are honoured.",
            valueName: "file"
        ),
        completion: .file()
    )
    var caFile: String?

    /// The authorities to trust, or nil for the system's.
    /// - Throws: `ValidationError` naming `--cacert`, `SSL_CERT_FILE` or `SSL_CERT_DIR` when its
    ///   path cannot be used (exit 64).
    func authorities() throws -> CertificateAuthorities? {
        do {
            return try CertificateAuthorities.resolve(caFile: caFile)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// Runs `body` with a transport that trusts these authorities; a client made for them is shut
    /// down when `body` ends, however it ends.
    func withTransport<Result>(_ body: (AsyncHTTPClientTransport) async throws -> Result) async throws -> Result {
        guard let authorities = try authorities() else { return try await body(AsyncHTTPClientTransport()) }
        let client = AsyncHTTPClientTransport.makeClient(trusting: authorities)
        do {
            let result = try await body(AsyncHTTPClientTransport(client: client))
            try? await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
