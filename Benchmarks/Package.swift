// swift-tools-version: 6.2
// Benchmarks of SwitchyardCore, kept out of the main package so its build and CI stay lean.
//
//   swift package --package-path Benchmarks -c release benchmark     # ordo-one/benchmark suites
//   bench/run-core.sh                                                # everything, as a table
import Foundation
import PackageDescription

/// A path dependency's package identity is its folder name, which differs between clones and worktrees
/// (`switchyard`, `main`, `bench`), so derive it from where this manifest lives.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let switchyard = repositoryRoot.lastPathComponent.lowercased()

let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "SwitchyardBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        // The default trait pulls a runtime interposer that is not mirrored here; the malloc counters are all we need.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        // Generated snapshots and the reference evaluators the figures are compared with.
        .target(
            name: "CoreFixtures",
            dependencies: [.product(name: "SwitchyardCore", package: switchyard)],
            swiftSettings: settings
        ),
        // Instruction counts under callgrind, and a self-timed cross-check of the benchmark figures.
        .executableTarget(
            name: "core-figures",
            dependencies: ["CoreFixtures", .product(name: "SwitchyardCore", package: switchyard)],
            swiftSettings: settings
        ),
        // Counts allocations per thread and live bytes by interposing glibc's allocator (client-figures only).
        .target(name: "MallocCounter"),
        // The client runtime's figures: isEnabled under updates, memory, change propagation from a live flagsd.
        .executableTarget(
            name: "client-figures",
            dependencies: [
                "CoreFixtures", "MallocCounter",
                .product(name: "SwitchyardCore", package: switchyard),
                .product(name: "SwitchyardClient", package: switchyard),
            ],
            swiftSettings: settings
        ),
        // The combination matrix's figures: switch evaluation alone, the kit over a 20-gate app, the rider sample.
        .executableTarget(
            name: "matrix-figures",
            dependencies: [
                .product(name: "SwitchyardCore", package: switchyard),
                .product(name: "SwitchyardMatrix", package: switchyard),
                .product(name: "RiderApp", package: switchyard),
                .product(name: "SwitchyardPlugins", package: switchyard),
            ],
            swiftSettings: settings
        ),
        // Live plugin points: change → every point settled (4 and 50 points), transitions checked per second.
        .executableTarget(
            name: "plugin-figures",
            dependencies: [
                .product(name: "SwitchyardCore", package: switchyard),
                .product(name: "SwitchyardClient", package: switchyard),
                .product(name: "SwitchyardPlugins", package: switchyard),
                .product(name: "SwitchyardMatrix", package: switchyard),
                .product(name: "RiderApp", package: switchyard),
            ],
            swiftSettings: settings
        ),
        // The crash guard's false-trip rates and time to trip, by simulation through its rule.
        .executableTarget(
            name: "guard-figures",
            dependencies: [
                .product(name: "SwitchyardCore", package: switchyard),
                .product(name: "SwitchyardGuard", package: switchyard),
            ],
            swiftSettings: settings
        ),
        // Release plans by simulation: time to everyone, the chance a bad plugin gets there, against the guard alone.
        .executableTarget(
            name: "release-figures",
            dependencies: [
                .product(name: "SwitchyardCore", package: switchyard),
                .product(name: "SwitchyardGuard", package: switchyard),
            ],
            swiftSettings: settings
        ),
        .executableTarget(
            name: "CoreEvaluation",
            dependencies: [
                "CoreFixtures",
                .product(name: "SwitchyardCore", package: switchyard),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CoreEvaluation",
            swiftSettings: settings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
