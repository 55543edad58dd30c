import Foundation

/// A self-signed certificate for `127.0.0.1` and `localhost`, made by the `openssl` command in a
/// directory of the test's (`.ci/run` installs `openssl` where it is missing). The certificate is
/// its own certificate authority: trusting its file is trusting a private CA.
public struct SelfSignedCertificate: Sendable {
    /// The certificate, PEM.
    public let certificatePath: String
    /// Its private key, PEM (PKCS #8).
    public let privateKeyPath: String

    /// Makes a fresh key and certificate, valid for two days, in `directory`.
    /// - Parameters:
    ///   - directory: Where the two files are written.
    ///   - name: The files' base name, so one directory can hold several certificates.
    /// - Throws: When `openssl` is missing or fails; its output is in the error.
    public init(in directory: TemporaryDirectory, name: String = "server") throws {
        certificatePath = directory.path("\(name).crt")
        privateKeyPath = directory.path("\(name).key")
        let result = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", privateKeyPath, "-out", certificatePath, "-days", "2", "-subj", "/CN=Tollgate test CA \(name)",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ], timeLimit: 60)
        guard result.status == 0 else { throw CertificateCommandFailed(output: result.stderr) }
    }

    /// `openssl` could not make the certificate.
    public struct CertificateCommandFailed: Error, CustomStringConvertible {
        public let output: String
        public var description: String { "openssl req failed: \(output)" }
    }
}
