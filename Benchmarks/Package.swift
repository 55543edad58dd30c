// swift-tools-version:6.1
// Tollgate's benchmarks: a package of their own, so the main package's `swift test` never builds
// package-benchmark. `bash Benchmarks/compare.sh` runs everything side by side with its references.
import PackageDescription

let package = Package(
    name: "TollgateBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named, so the identity does not depend on the name of the folder the repository is in.
        .package(name: "Tollgate", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
    ],
    targets: [
        // The system SQLite3, called bare by the end-to-end floor (EndToEndFloor).
        .systemLibrary(name: "CSQLiteFloor", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The fake YouTube API the end-to-end scenario revalidates against: the main package's
        // TollgateFakeAPI sources (a symbolic link), compiled here under a name of its own, because
        // the fakes are a target of that package, not a product anyone depends on.
        .target(
            name: "BenchmarkFakeAPI",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The scenarios, shared by the package-benchmark suite and the comparison harness.
        .target(
            name: "BenchmarkScenarios",
            dependencies: [
                "CSQLiteFloor",
                .product(name: "Tollgate", package: "Tollgate"),
                .product(name: "TollgateSQLite", package: "Tollgate"),
                "BenchmarkFakeAPI",
                .product(name: "TollgatePostgres", package: "Tollgate"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The harness `compare.sh` runs: times each scenario and prints medians, one line each.
        .executableTarget(
            name: "tollgate-bench",
            dependencies: ["BenchmarkScenarios", .product(name: "Logging", package: "swift-log")]
        ),
        // The same scenarios under package-benchmark: `swift package benchmark` in this folder.
        .executableTarget(
            name: "TollgateBenchmarks",
            dependencies: [
                "BenchmarkScenarios",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/TollgateBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The scenarios run on their caller's executor, as the library does: the harness times a
// main-actor caller and a nonisolated one.
for target in package.targets where target.type != .plugin && target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
}
