// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Tollgate",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "TollgateStore", targets: ["TollgateStore"]),
        .library(name: "Tollgate", targets: ["Tollgate"]),
        .executable(name: "tollgate", targets: ["tollgate"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
    ],
    targets: [
        // The system SQLite3 (apt: libsqlite3-dev), as GRDB and SwiftPM link it.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The one storage module: connection, transactions, migrator and every table's operations.
        .target(
            name: "TollgateStore",
            dependencies: [
                "CSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The services and the gate. Depends on nothing heavier than the store.
        .target(
            name: "Tollgate",
            dependencies: [
                "TollgateStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(
            name: "tollgate",
            dependencies: [
                "Tollgate",
                "TollgateStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Runs jobs in separate processes for the multi-process tests. Not a product.
        .executableTarget(
            name: "TollgateWorker",
            dependencies: ["Tollgate", "TollgateStore"]
        ),
        .testTarget(
            name: "TollgateTests",
            dependencies: [
                "Tollgate",
                "TollgateStore",
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TollgateStoreTests",
            dependencies: ["TollgateStore", "CSQLite"]
        ),
        .testTarget(
            name: "TollgateCLITests",
            dependencies: ["tollgate", "TollgateStore"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
