// swift-tools-version: 6.2
import PackageDescription

/// Every target: Swift 6 language mode, explicit existentials, imports visible only where declared.
let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Switchyard",
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        .library(name: "SwitchyardCore", targets: ["SwitchyardCore"]),
        .library(name: "SwitchyardClient", targets: ["SwitchyardClient"]),
        .library(name: "SwitchyardPlugins", targets: ["SwitchyardPlugins"]),
        .library(name: "SwitchyardMatrix", targets: ["SwitchyardMatrix"]),
        .library(name: "SwitchyardGuard", targets: ["SwitchyardGuard"]),
        // For apps' own tests of their Switchyard integration: a flagsd stand-in, a hostile HTTP server, a test clock.
        .library(name: "SwitchyardClientTesting", targets: ["SwitchyardClientTesting"]),
        // The sample app's library, for the matrix benchmark (Benchmarks/) and apps that embed the sample.
        .library(name: "RiderApp", targets: ["RiderApp"]),
        .executable(name: "flagsd", targets: ["flagsd"]),
        .executable(name: "flagctl", targets: ["flagctl"]),
        .executable(name: "rider-sample", targets: ["rider-sample"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        // Already built for postgres-nio (the same range): HMAC for signing webhook posts.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.9.0"..<"6.0.0"),
    ],
    targets: [
        // The flag model, evaluation engine, bucketing and snapshot format. Foundation-free: builds for iOS.
        .target(name: "SwitchyardCore", swiftSettings: settings),
        // The admin API's bodies, typed once: written by flagsd, read by flagctl. Foundation-free, like the core.
        .target(name: "SwitchyardWire", dependencies: ["SwitchyardCore"], swiftSettings: settings),
        // Flag files as code: YAML definitions in `Flags/`, linted and loaded into the model.
        .target(
            name: "SwitchyardFlagFiles",
            dependencies: ["SwitchyardCore", .product(name: "Yams", package: "Yams")],
            swiftSettings: settings
        ),
        // The client runtime apps embed: long-poll sync, last known good, evaluation front end. Foundation only.
        .target(name: "SwitchyardClient", dependencies: ["SwitchyardCore"], swiftSettings: settings),
        // Test kit for apps (and our tests) of the client runtime: a flagsd stand-in on loopback, a scriptable and
        // hostile HTTP server, a test clock with a wall clock that moves with it. Foundation only.
        .target(
            name: "SwitchyardClientTesting", dependencies: ["SwitchyardCore", "SwitchyardClient"],
            swiftSettings: settings),
        // Plugin points, plugin factories and the core-only guarantee, over the client runtime.
        .target(
            name: "SwitchyardPlugins", dependencies: ["SwitchyardCore", "SwitchyardClient"], swiftSettings: settings),
        // Which switch combinations a matrix runs: gates, exhaustive or covering-array plans, shards. Shared by the
        // test kit and `flagctl matrix`.
        .target(name: "SwitchyardMatrixPlan", dependencies: ["SwitchyardCore"], swiftSettings: settings),
        // The exhaustive combination matrix test kit (imports Swift Testing; link it into test targets only).
        .target(
            name: "SwitchyardMatrix",
            dependencies: [
                "SwitchyardCore", "SwitchyardClient", "SwitchyardPlugins", "SwitchyardMatrixPlan",
                "SwitchyardFlagFiles",
            ],
            swiftSettings: settings
        ),
        // The release manager's command line, as a library so tests drive the real commands.
        .target(
            name: "FlagctlCommands",
            dependencies: [
                "SwitchyardCore", "SwitchyardWire", "SwitchyardFlagFiles", "SwitchyardMatrixPlan",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: settings
        ),
        .executableTarget(name: "flagctl", dependencies: ["FlagctlCommands"], swiftSettings: settings),
        // Storage of flag sets, the change log, audit log, tokens and client events: the protocol every backend
        // implements, its records, and the change planning they share. No database library.
        .target(
            name: "SwitchyardStorage",
            dependencies: ["SwitchyardCore", "SwitchyardWire", .product(name: "Logging", package: "swift-log")],
            swiftSettings: settings
        ),
        // The embedded backend: one SQLite file (the system's libsqlite3) through GRDB.
        .target(
            name: "SwitchyardSQLite",
            dependencies: [
                "SwitchyardCore", "SwitchyardStorage", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: settings
        ),
        // The PostgreSQL backend of the storage protocol (PostgresNIO), for several flagsd instances sharing one database.
        .target(
            name: "SwitchyardPostgres",
            dependencies: [
                "SwitchyardCore", "SwitchyardStorage",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: settings
        ),
        // The crash guard's decisions: windowed counts, the Wilson-bound trip rule, scopes, evidence. No I/O.
        .target(
            name: "SwitchyardGuard", dependencies: ["SwitchyardCore", "SwitchyardWire", "SwitchyardStorage"],
            swiftSettings: settings),
        // The files flagsd serves as they are: the web console (plain HTML, CSS and JavaScript at /console/, no build
        // step) and the API's OpenAPI document (/openapi.yaml; docs/openapi.yaml links to it).
        .target(
            name: "SwitchyardConsole", dependencies: ["SwitchyardCore"],
            resources: [.copy("Assets"), .copy("openapi.yaml")],
            swiftSettings: settings
        ),
        // The system zlib, for the gzip form of snapshots (built once per version, so speed matters little).
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // flagsd's HTTP application: admin API, long-poll snapshots, events, metrics.
        .target(
            name: "SwitchyardServer",
            dependencies: [
                "SwitchyardCore", "SwitchyardWire", "SwitchyardStorage", "SwitchyardFlagFiles", "SwitchyardGuard",
                "SwitchyardConsole", "CZlib",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: settings
        ),
        .executableTarget(
            name: "flagsd",
            dependencies: [
                "SwitchyardServer", "SwitchyardStorage", "SwitchyardSQLite", "SwitchyardPostgres", "SwitchyardCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: settings
        ),
        // The sample rider app: a core trip flow plus the plugin points of Flags/rider.yaml.
        .target(name: "RiderApp", dependencies: ["SwitchyardPlugins"], swiftSettings: settings),
        .executableTarget(
            name: "rider-sample",
            dependencies: ["RiderApp", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: settings
        ),

        .testTarget(
            name: "SwitchyardCoreTests",
            dependencies: ["SwitchyardCore", "TestSupport"],
            resources: [.copy("Data")],
            swiftSettings: settings
        ),
        .testTarget(
            name: "SwitchyardWireTests", dependencies: ["SwitchyardWire", "SwitchyardCore"], swiftSettings: settings),
        .testTarget(
            name: "SwitchyardFlagFilesTests",
            dependencies: ["SwitchyardFlagFiles", "SwitchyardCore", "TestSupport"],
            exclude: ["Fixtures"],
            swiftSettings: settings
        ),
        // Test support: waiting for child processes and CPU-heavy work without blocking a thread of the cooperative pool.
        .target(
            name: "TestSupport",
            path: "Tests/TestSupport",
            swiftSettings: settings
        ),
        // Test support for our client runtime tests: fixtures and a harness, over SwitchyardClientTesting.
        .target(
            name: "ClientTestSupport",
            dependencies: ["SwitchyardCore", "SwitchyardClient", "SwitchyardClientTesting"],
            path: "Tests/ClientTestSupport",
            swiftSettings: settings
        ),
        .testTarget(
            name: "SwitchyardClientTests",
            dependencies: ["SwitchyardCore", "SwitchyardClient", "SwitchyardClientTesting", "ClientTestSupport"],
            swiftSettings: settings
        ),
        .testTarget(
            name: "SwitchyardPluginsTests",
            dependencies: ["SwitchyardCore", "SwitchyardPlugins", "SwitchyardClientTesting", "ClientTestSupport"],
            swiftSettings: settings
        ),
        // Test support for the PostgreSQL backend: the test server's URL, fresh databases, private servers.
        .target(
            name: "PostgresTestSupport",
            dependencies: [
                "SwitchyardPostgres", "TestSupport", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/PostgresTestSupport",
            swiftSettings: settings
        ),
        // Test support: the real flagsd application live on a loopback port, for the tests of every target that needs one.
        .target(
            name: "LiveFlagsdSupport",
            dependencies: [
                "SwitchyardServer", "SwitchyardStorage", .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/LiveFlagsdSupport",
            swiftSettings: settings
        ),
        .testTarget(
            name: "SwitchyardMatrixTests",
            dependencies: [
                "SwitchyardMatrix", "SwitchyardMatrixPlan", "SwitchyardPlugins", "SwitchyardCore",
                "SwitchyardFlagFiles", "TestSupport",
            ],
            swiftSettings: settings
        ),
        .testTarget(
            name: "SwitchyardStorageTests",
            dependencies: [
                "SwitchyardStorage", "SwitchyardSQLite", "SwitchyardCore", "SwitchyardPostgres", "PostgresTestSupport",
                "TestSupport", "SwitchyardWire",
                "SwitchyardClientTesting", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: settings
        ),
        .testTarget(
            name: "SwitchyardGuardTests",
            dependencies: ["SwitchyardGuard", "SwitchyardWire", "SwitchyardStorage", "SwitchyardCore", "TestSupport"],
            swiftSettings: settings
        ),
        // A fleet of real client runtimes against a live flagsd: the crash guard end to end.
        .testTarget(
            name: "GuardFleetTests",
            dependencies: [
                "SwitchyardServer", "SwitchyardStorage", "SwitchyardSQLite", "SwitchyardClient", "SwitchyardCore",
                "SwitchyardWire", "TestSupport",
                "LiveFlagsdSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: settings
        ),
        .testTarget(
            name: "SwitchyardServerTests",
            dependencies: [
                "SwitchyardServer", "SwitchyardStorage", "SwitchyardSQLite", "SwitchyardCore", "SwitchyardFlagFiles",
                "SwitchyardConsole", "SwitchyardWire",
                "SwitchyardPostgres", "PostgresTestSupport", "TestSupport", "LiveFlagsdSupport",
                // The client runtime against the real flagsd, end to end (deltas).
                "SwitchyardClient", "SwitchyardClientTesting", "ClientTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: settings
        ),
        .testTarget(
            name: "RiderAppTests",
            dependencies: [
                "RiderApp", "SwitchyardPlugins", "SwitchyardCore", "SwitchyardFlagFiles", "SwitchyardMatrix",
            ],
            swiftSettings: settings
        ),
        // Dashboards/ and deploy/ against the real flagsd: metrics, options, probes; promtool, systemd-analyze.
        .testTarget(
            name: "DeployTests",
            dependencies: ["flagsd", "SwitchyardCore", "TestSupport", .product(name: "Yams", package: "Yams")],
            swiftSettings: settings
        ),
        .testTarget(
            name: "FlagctlTests",
            // `flagctl` and `rider-sample` so the end-to-end tests find the built binaries next to the test bundle;
            // the server and storage so they run a live flagsd in-process on a random loopback port.
            dependencies: [
                "FlagctlCommands", "SwitchyardFlagFiles", "SwitchyardCore", "flagctl", "rider-sample",
                "SwitchyardServer", "SwitchyardStorage", "SwitchyardWire",
                "SwitchyardSQLite",
                "TestSupport", "LiveFlagsdSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: settings
        ),
    ]
)
