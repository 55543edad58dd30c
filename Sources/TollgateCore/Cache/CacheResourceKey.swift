/// How a stored resource's key is spelled: its URL (normalised, secrets redacted), a line feed, and
/// the hex SHA-256 of its method, URL and credential partition.
///
/// The digest alone would make the key unique. The URL in front makes every key of one URL sort
/// together, so the entries an unsafe method invalidates (RFC 9111 §4.4: the URL's, whatever their
/// method, credentials or variant) are one range of the key's own unique index, and the cache
/// needs no index on its URLs: a store at capacity moves one index entry fewer.
public enum CacheResourceKey {
    /// The key of a resource.
    /// - Parameters:
    ///   - url: The normalised URL with every secret redacted, as stored in the entry.
    ///   - digest: The hex SHA-256 of the method, the URL and the credential partition.
    /// - Returns: `url`, a line feed, `digest`.
    public static func make(url: String, digest: String) -> String {
        url + "\n" + digest
    }

    /// The bounds between which, in byte order, every key made for `url` sorts: from `url` and a
    /// line feed (included) to `url` and the next byte, a vertical tab (excluded). A URL that
    /// continues past `url` with a line feed of its own would fall inside too, so a caller also
    /// compares the stored URL.
    /// - Parameter url: The normalised, redacted URL.
    /// - Returns: The lower bound (included) and the upper bound (excluded).
    public static func range(forURL url: String) -> (lower: String, upper: String) {
        (url + "\n", url + "\u{0B}")
    }
}
