/// A certificate authority file or directory that cannot be used, named as the user gave it.
public enum CertificateAuthorityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file cannot be read: missing, a directory, or not readable by this user.
    case unreadable(source: String, path: String, reason: String)
    /// The file was read but holds no PEM certificate.
    case noCertificates(source: String, path: String)
    /// A directory of authorities that is not a directory.
    case notADirectory(source: String, path: String)

    public var description: String {
        switch self {
        case .unreadable(let source, let path, let reason):
            "\(source) '\(path)' cannot be read: \(reason)."
        case .noCertificates(let source, let path):
            "\(source) '\(path)' holds no PEM certificate (-----BEGIN CERTIFICATE-----)."
        case .notADirectory(let source, let path):
            "\(source) '\(path)' is not a directory of certificates."
        }
    }
}
