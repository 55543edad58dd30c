import Foundation
import Testing
import TollgateTestSupport

/// `--cacert FILE`, `SSL_CERT_FILE` and `SSL_CERT_DIR`: trusting a private CA (issue 31, item 4),
/// against an HTTPS origin on loopback whose self-signed certificate no system trusts.
@Suite("tollgate get and proxy: trusting a private certificate authority")
struct CertificateAuthorityCommandTests {
    /// The environment of a run that trusts only the system's authorities.
    static let systemTrust = ["SSL_CERT_FILE": "", "SSL_CERT_DIR": ""]

    @Test("get without a way to trust the certificate fails once, refunded, exit 6; with --cacert it is answered")
    func getWithCACert() async throws {
        let directory = try TemporaryDirectory()
        let server = try await TLSTestServer(in: directory, body: "private page")
        let url = "\(server.baseURL)/youtube/v3/videos?id=1"
        let database = directory.path("get.sqlite")

        let untrusted = try CommandRunner.tollgate("get", url, "--db", database, environment: Self.systemTrust)
        #expect(untrusted.status == 6, "\(untrusted.stderr)")
        #expect(untrusted.stderr.contains("units charged 0"), "\(untrusted.stderr)")
        #expect(untrusted.stderr.lowercased().contains("certificate") || untrusted.stderr.contains("TLS"),
                "the line says why: \(untrusted.stderr)")
        #expect(untrusted.stdout.isEmpty)
        #expect(server.requestCount == 0)
        #expect(try CommandRunner.sqliteValue(database, "SELECT COALESCE(SUM(units), 0) FROM quota_events") == "0")
        #expect(try CommandRunner.sqliteValue(database, "SELECT COALESCE(MAX(consecutive_failures), 0) FROM circuits") == "0",
                "a certificate failure is not the server's")

        let trusted = try CommandRunner.tollgate("get", url, "--db", database, "--cacert", server.certificate.certificatePath,
                                                 environment: Self.systemTrust)
        await server.stop()
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(trusted.stdout == "private page")
        #expect(trusted.stderr.contains("units charged 1"), "\(trusted.stderr)")
        #expect(server.requestCount == 1)
    }

    @Test("get honours SSL_CERT_FILE, and SSL_CERT_DIR (a directory hashed as c_rehash does), when --cacert is absent")
    func environment() async throws {
        guard CommandRunner.isInstalled("openssl") else { Issue.record("openssl is not installed: .ci/run installs it"); return }
        let directory = try TemporaryDirectory()
        let server = try await TLSTestServer(in: directory, body: "from the environment")
        let url = "\(server.baseURL)/youtube/v3/videos?id=1"

        let byFile = try CommandRunner.tollgate("get", url, "--db", directory.path("file.sqlite"),
                                                environment: ["SSL_CERT_FILE": server.certificate.certificatePath,
                                                              "SSL_CERT_DIR": ""])
        #expect(byFile.status == 0, "\(byFile.stderr)")
        #expect(byFile.stdout == "from the environment")

        let hashed = directory.path("certs")
        try FileManager.default.createDirectory(atPath: hashed, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: server.certificate.certificatePath, toPath: "\(hashed)/private-ca.pem")
        let rehash = try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["openssl", "rehash", hashed])
        #expect(rehash.status == 0, "\(rehash.stderr)")
        let byDirectory = try CommandRunner.tollgate("get", url, "--db", directory.path("dir.sqlite"),
                                                     environment: ["SSL_CERT_FILE": "", "SSL_CERT_DIR": hashed])
        #expect(byDirectory.status == 0, "\(byDirectory.stderr)")
        #expect(byDirectory.stdout == "from the environment")

        // Both, as a distribution sets them: the file's authorities and the directory's.
        let other = try SelfSignedCertificate(in: directory, name: "other")
        let byBoth = try CommandRunner.tollgate("get", url, "--db", directory.path("both.sqlite"),
                                                environment: ["SSL_CERT_FILE": other.certificatePath, "SSL_CERT_DIR": hashed])
        #expect(byBoth.status == 0, "\(byBoth.stderr)")
        let neither = try CommandRunner.tollgate("get", url, "--db", directory.path("neither.sqlite"),
                                                 environment: ["SSL_CERT_FILE": other.certificatePath,
                                                               "SSL_CERT_DIR": directory.path("nothing-hashed")])
        #expect(neither.status == 64, "a directory that does not exist: \(neither.stderr)")
        #expect(neither.stderr.contains("SSL_CERT_DIR"), "\(neither.stderr)")
        await server.stop()
        #expect(server.requestCount == 3)
    }

    @Test("a CA file that is missing or holds no certificate is a usage error naming where it came from")
    func badCAFile() throws {
        let directory = try TemporaryDirectory()
        let notPEM = directory.path("not-a-ca.pem")
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: notPEM))
        let url = "https://127.0.0.1:1/youtube/v3/videos?id=1"
        let database = directory.path("bad.sqlite")

        let missing = try CommandRunner.tollgate("get", url, "--db", database, "--cacert", directory.path("nope.pem"))
        #expect(missing.status == 64, "\(missing.stderr)")
        #expect(missing.stderr.contains("--cacert"), "\(missing.stderr)")
        #expect(missing.stderr.contains("nope.pem"), "\(missing.stderr)")

        let garbage = try CommandRunner.tollgate("get", url, "--db", database, "--cacert", notPEM)
        #expect(garbage.status == 64, "\(garbage.stderr)")
        #expect(garbage.stderr.contains("no PEM certificate"), "\(garbage.stderr)")

        let fromEnvironment = try CommandRunner.tollgate("get", url, "--db", database,
                                                         environment: ["SSL_CERT_FILE": notPEM])
        #expect(fromEnvironment.status == 64, "\(fromEnvironment.stderr)")
        #expect(fromEnvironment.stderr.contains("SSL_CERT_FILE"), "\(fromEnvironment.stderr)")

        let proxy = try CommandRunner.tollgate("proxy", "--listen", "127.0.0.1:0", "--upstream", "https://127.0.0.1:1",
                                               "--db", database, "--cacert", directory.path("nope.pem"))
        #expect(proxy.status == 64, "\(proxy.stderr)")
        #expect(proxy.stderr.contains("--cacert"), "\(proxy.stderr)")
        #expect(!FileManager.default.fileExists(atPath: database), "refused before the database is opened")
    }

    @Test("proxy --cacert reaches an upstream behind a private CA; without it the client gets a 502, uncharged")
    func proxyWithCACert() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let directory = try TemporaryDirectory()
        let server = try await TLSTestServer(in: directory, body: "upstream page")
        for trusts in [false, true] {
            let database = directory.path("proxy-\(trusts).sqlite")
            let proxy = try BackgroundCommand(CommandRunner.tollgate, [
                "proxy", "--listen", "127.0.0.1:0", "--upstream", server.baseURL, "--db", database,
            ] + (trusts ? ["--cacert", server.certificate.certificatePath] : []))
            let banner = try #require(proxy.firstLine(), "the proxy exited before listening")
            let address = try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") })
            let answer = try CurlResponse.fetch("\(address)/youtube/v3/videos?id=\(trusts)")
            let (status, stderr) = proxy.interrupt()
            #expect(status == 0, "proxy exit \(status): \(stderr)")
            if trusts {
                #expect(answer.status == 200, "\(stderr)")
                #expect(answer.body == "upstream page")
                #expect(answer.headers["x-tollgate-units"] == "1")
            } else {
                #expect(answer.status == 502, "\(stderr)")
                #expect(try CommandRunner.sqliteValue(database, "SELECT COALESCE(SUM(units), 0) FROM quota_events") == "0")
            }
        }
        await server.stop()
        #expect(server.requestCount == 1, "the untrusted attempt never reached the upstream's application")
    }
}
