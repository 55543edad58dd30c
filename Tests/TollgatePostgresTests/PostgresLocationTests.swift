import Testing
import TollgateCore
import TollgatePostgres

@Suite("PostgreSQL URLs")
struct PostgresLocationTests {
    @Test("a postgresql:// URL gives host, port, user, password and database; postgres:// too")
    func parsesURLs() throws {
        let full = try PostgresLocation(url: "postgresql://gate:s3cret@db.internal:6543/fleet?sslmode=require")
        #expect(full == PostgresLocation(
            host: "db.internal", port: 6543, username: "gate", password: "s3cret", database: "fleet", tlsMode: .require
        ))
        #expect(full.description == "db.internal:6543/fleet")
        let short = try PostgresLocation(url: "postgres://127.0.0.1/tollgate")
        #expect(short.port == 5432)
        #expect(short.username == "postgres")
        #expect(short.tlsMode == .disable)
        #expect(try PostgresLocation(url: "postgresql://alice@host").database == "alice")
    }

    @Test("other schemes, a missing host and an unknown sslmode are refused with the password masked")
    func refusesOtherURLs() {
        for url in [
            "mysql://h/db", "postgresql:///db", "postgresql://u:hunter2@h/db?sslmode=sometimes", "tollgate.sqlite",
            // A password with characters a URL must escape: the URL cannot be parsed, and is still masked.
            "postgresql://u:hun#ter2@h/db", "postgresql://u:hunter2/x@h/db",
        ] {
            let error = #expect(throws: PostgresStoreError.self, "\(url)") {
                try PostgresLocation(url: url)
            }
            guard case .invalidURL? = error, let text = error?.description else {
                Issue.record("\(url): not invalidURL: \(String(describing: error))")
                continue
            }
            #expect(!text.contains("hunter2"), "\(text)")
            #expect(!text.contains("ter2"), "\(text)")
        }
    }
}
