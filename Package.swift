// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Tollgate",
    // The lowest versions the code needs: Synchronization's Mutex and Atomic (used by the store,
    // the gate and the services) first shipped in macOS 15, iOS 18, tvOS 18, watchOS 11 and
    // visionOS 2. Observation (the dashboard model) needs less.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "TollgateCore", targets: ["TollgateCore"]),
        .library(name: "TollgateSQLite", targets: ["TollgateSQLite"]),
        .library(name: "Tollgate", targets: ["Tollgate"]),
        .library(name: "TollgateAsyncHTTPClient", targets: ["TollgateAsyncHTTPClient"]),
        .library(name: "TollgateOpenAPI", targets: ["TollgateOpenAPI"]),
        .library(name: "TollgateProxy", targets: ["TollgateProxy"]),
        .library(name: "TollgateSwiftUI", targets: ["TollgateSwiftUI"]),
        .library(name: "TollgateAPIDescription", targets: ["TollgateAPIDescription"]),
        .library(name: "TollgateSimulation", targets: ["TollgateSimulation"]),
        .library(name: "TollgatePostgres", targets: ["TollgatePostgres"]),
        .library(name: "TollgateAdmin", targets: ["TollgateAdmin"]),
        .executable(name: "tollgate", targets: ["tollgate"]),
    ],
    // `SQLite` (on by default): `import Tollgate` brings the SQLite store with it. An app that runs
    // the gate over PostgreSQL or its own storage depends on the package with `traits: []`, and the
    // gate then links no database.
    traits: [
        .trait(name: "SQLite", description: "The SQLite store, re-exported by `import Tollgate`."),
        .default(enabledTraits: ["SQLite"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.7.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.24.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.20.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.25.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.0.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-structured-headers.git", from: "1.7.0"),
    ],
    targets: [
        // The system SQLite3 (apt: libsqlite3-dev), as GRDB and SwiftPM link it.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // A VFS over SQLite's default one that writes each transaction's write-ahead-log frames in one
        // system call. C, because a VFS is a table of C function pointers SQLite calls on every write.
        .target(
            name: "CSQLiteBatchedWAL",
            dependencies: ["CSQLite"]
        ),
        // zlib (apt: zlib1g-dev) and brotli's decoder (apt: libbrotli-dev), to read a cost from a
        // compressed answer. Apple's SDKs carry zlib; brotli is linked on Linux only.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CBrotli", pkgConfig: "libbrotlidec", providers: [.apt(["libbrotli-dev"])]),
        // The domain without a database: records, the store protocols, the circuit state machine,
        // quota rules and their messages, PacificDay, clocks, the stored-header codec. Neither SQLite
        // nor PostgreSQL: both stores build on it.
        .target(
            name: "TollgateCore"
        ),
        // The one SQLite storage module: connection, transactions, migrator and every table's operations.
        .target(
            name: "TollgateSQLite",
            dependencies: [
                "TollgateCore",
                "CSQLite",
                "CSQLiteBatchedWAL",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The PostgreSQL store for fleets: the same store protocols over a PostgresClient pool.
        // It depends on the core, not on the SQLite store: it builds without SQLite, and nothing in
        // the core depends on it, so a single-machine build never compiles PostgresNIO.
        .target(
            name: "TollgatePostgres",
            dependencies: [
                "TollgateCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The services and the gate, over the core's store protocols only: no database. The SQLite
        // store comes along (re-exported) under the default `SQLite` trait.
        .target(
            name: "Tollgate",
            dependencies: [
                "TollgateCore",
                .target(name: "TollgateSQLite", condition: .when(traits: ["SQLite"])),
                "CZlib",
                .target(name: "CBrotli", condition: .when(platforms: [.linux])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ]
        ),
        // Adapters and the fake API: each in its own target, so the core builds no web stack.
        .target(
            name: "TollgateAsyncHTTPClient",
            dependencies: [
                "Tollgate",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "TollgateOpenAPI",
            dependencies: [
                "Tollgate",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "TollgateFakeAPI",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // An app's own view of its ledger: an @Observable snapshot model over any store that gives a
        // snapshot, and a SwiftUI view behind #if canImport(SwiftUI). Depends on the core alone.
        .target(
            name: "TollgateSwiftUI",
            dependencies: ["TollgateCore"]
        ),
        // Replays of recorded traffic (HAR files) through a real gate per description: `tollgate simulate`.
        .target(
            name: "TollgateSimulation",
            dependencies: [
                "Tollgate",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // API description files (YAML, through Yams): a non-YouTube API without writing Swift.
        .target(
            name: "TollgateAPIDescription",
            dependencies: [
                "Tollgate",
                .product(name: "Yams", package: "Yams"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // A loopback reverse proxy that puts any HTTP client behind the gate.
        .target(
            name: "TollgateProxy",
            dependencies: [
                "Tollgate",
                "TollgateSimulation",
                "TollgateAsyncHTTPClient",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ]
        ),
        // The operators' listener: /metrics for Prometheus, the web dashboard and /api/snapshot,
        // read from any store. Prometheus and Hummingbird stay out of the core library.
        .target(
            name: "TollgateAdmin",
            dependencies: [
                "Tollgate",
                "TollgateSQLite",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "tollgate",
            dependencies: [
                "Tollgate",
                "TollgateAPIDescription",
                "TollgateSimulation",
                "TollgateSQLite",
                "TollgateFakeAPI",
                "TollgateProxy",
                "TollgateAdmin",
                "TollgateAsyncHTTPClient",
                "TollgatePostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Runs jobs in separate processes for the multi-process tests. Not a product.
        .executableTarget(
            name: "TollgateWorker",
            dependencies: [
                "Tollgate",
                "TollgateSQLite",
                "TollgatePostgres",
                "TollgateTestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ],
            path: "Tests/TollgateWorker"
        ),
        // Helpers shared by the test targets: temporary directories, worker processes, clocks, logs.
        .target(
            name: "TollgateTestSupport",
            dependencies: [
                "TollgateSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                // TLSTestServer: an HTTPS origin on loopback with a self-signed certificate.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/TollgateTestSupport"
        ),
        .testTarget(
            name: "TollgateTests",
            dependencies: [
                "Tollgate",
                "TollgateSQLite",
                "TollgateTestSupport",
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TollgateEndToEndTests",
            dependencies: [
                "Tollgate",
                "TollgateAsyncHTTPClient",
                "TollgateProxy",
                "TollgateOpenAPI",
                "TollgateFakeAPI",
                "TollgateTestSupport",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TollgateSQLiteTests",
            dependencies: ["TollgateSQLite", "TollgateCore", "CSQLite", "TollgateTestSupport"]
        ),
        // Crashes, contention, faults, hostile input and secrets; sized by TOLLGATE_STRESS_SCALE.
        .testTarget(
            name: "TollgateReliabilityTests",
            dependencies: [
                "Tollgate",
                "TollgateSQLite",
                "TollgateAsyncHTTPClient",
                "TollgateProxy",
                "TollgateFakeAPI",
                "TollgateTestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        // The PostgreSQL store's tests, and the conformance suite that runs against both stores.
        // The PostgreSQL half needs TOLLGATE_POSTGRES_URL (see Scripts/postgres-cluster.sh).
        // The admin listener: metrics read by Prometheus's own parser, the dashboard in a real
        // browser, and the proxy's RateLimit fields.
        .testTarget(
            name: "TollgateAdminTests",
            dependencies: [
                "Tollgate",
                "TollgateSQLite",
                "TollgateAdmin",
                "TollgateProxy",
                "TollgateFakeAPI",
                "TollgateTestSupport",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TollgatePostgresTests",
            dependencies: [
                "TollgateAdmin",
                "TollgateProxy",
                "TollgateFakeAPI",
                .product(name: "Prometheus", package: "swift-prometheus"),
                "TollgatePostgres",
                "TollgateSQLite",
                "Tollgate",
                "TollgateTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "TollgateSwiftUITests",
            dependencies: ["TollgateSwiftUI", "TollgateSQLite", "Tollgate", "TollgateTestSupport"]
        ),
        .testTarget(
            name: "TollgateAPIDescriptionTests",
            dependencies: ["TollgateAPIDescription", "Tollgate", "TollgateTestSupport"]
        ),
        .testTarget(
            name: "TollgateCLITests",
            dependencies: ["tollgate", "Tollgate", "TollgateSQLite", "TollgateFakeAPI", "TollgateSimulation",
                           "TollgateTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Async functions run on their caller's executor unless they say otherwise (SE-0461): a call from
// the main actor does not hop to the global executor and back for each store operation.
// Adapters that conform to other packages' protocols (OpenAPI middleware, Hummingbird responders)
// keep those packages' semantics.
let callerIsolatedTargets: Set<String> = ["TollgateCore", "TollgateSQLite", "Tollgate", "TollgateAsyncHTTPClient"]
for target in package.targets where callerIsolatedTargets.contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
}
