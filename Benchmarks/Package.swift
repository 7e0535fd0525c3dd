// swift-tools-version:6.0
import PackageDescription

// Flowbus's benchmarks, a package of their own so the main build stays fast.
// Run everything with: swift run -c release --package-path Benchmarks flowbus-bench
let package = Package(
    name: "flowbus-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "flowbus", path: ".."),
        // Already a dependency of the main package; the executable bootstraps logging to stderr.
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        // The raw baselines call libzmq's C API directly, not Flowbus's Swift layer.
        .systemLibrary(
            name: "CRawZMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]
        ),
        .executableTarget(
            name: "flowbus-bench",
            dependencies: [
                "CRawZMQ",
                .product(name: "ZeroMQ", package: "flowbus"),
                .product(name: "Majordomo", package: "flowbus"),
                .product(name: "Clone", package: "flowbus"),
                // app-journey and app-memory drive the whole app as a client does.
                .product(name: "FlowClient", package: "flowbus"),
                .product(name: "FlowHost", package: "flowbus"),
                // app-journey reads the wall clock the host stamps its history with.
                .product(name: "FlowProtocol", package: "flowbus"),
                // chaos-check times the checker on a run of a million events.
                .product(name: "FlowChaos", package: "flowbus"),
                // app-store runs a PostgreSQL server of its own, as the tests do.
                .product(name: "FlowbusTesting", package: "flowbus"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
