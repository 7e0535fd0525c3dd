// swift-tools-version:6.0
import PackageDescription

// Upcoming features every Flowbus target builds with (see STYLE.md).
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    // Release builds leave out the runtime's exclusivity checks (`swift_beginAccess` on every
    // access to a class's stored property: 8–9 % of the broker's and a Clone subscriber's
    // instructions). Debug builds, which the tests run, keep them and catch a conflicting access.
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

import Foundation

/// Whether `path` (relative to this file) exists: an app is built only when its folder is there.
func present(_ path: String) -> Bool {
    FileManager.default.fileExists(atPath: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(path).path)
}

let package = Package(
    name: "flowbus",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "flowbus", targets: ["flowbus"]),
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
        .library(name: "Majordomo", targets: ["Majordomo"]),
        .library(name: "Clone", targets: ["Clone"]),
        .library(name: "FlowProtocol", targets: ["FlowProtocol"]),
        .library(name: "FlowHost", targets: ["FlowHost"]),
        .library(name: "FlowKit", targets: ["FlowKit"]),
        .library(name: "FlowClient", targets: ["FlowClient"]),
        .library(name: "FlowChaos", targets: ["FlowChaos"]),
        .library(name: "FlowSim", targets: ["FlowSim"]),
        .library(name: "FlowTerminal", targets: ["FlowTerminal"]),
        // The fuzz targets' decoders and properties, for the libFuzzer package in Fuzz/.
        .library(name: "FlowbusFuzzing", targets: ["FlowbusFuzzing"]),
        // Fixtures of the tests that start real processes; the benchmarks use its PostgreSQL server.
        .library(name: "FlowbusTesting", targets: ["FlowbusTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // SQLite for the sample apps' durable data (plugin-side only: the core never links it).
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // Exact latency percentiles in fixed memory, mergeable across simulator agents.
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
    ],
    targets: [
        // libzmq from Debian's libzmq3-dev, found through pkg-config.
        .systemLibrary(
            name: "CZeroMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]
        ),
        // fork/exec with PR_SET_PDEATHSIG: the one thing posix_spawn cannot do.
        .target(name: "CFlowHost"),
        // getpid kept in memory for every executable that links libzmq (libzmq asks it on every
        // mailbox look; a system call since glibc 2.25): Sources/CProcessID/process_id.c.
        .target(name: "CProcessID"),
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ", "CProcessID"], swiftSettings: strictSettings),
        // libsodium (Debian's libsodium-dev, which libzmq3-dev brings for CURVE): SHA-256 and
        // HMAC-SHA256 for session capabilities, the simulator's schedule hash and the apps' passwords.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .target(name: "Digests", dependencies: ["CSodium"], swiftSettings: strictSettings),
        // Manifest, restart policies and the OTP-style supervisor of plugin processes.
        .target(
            name: "Supervision",
            dependencies: ["CFlowHost", "FlowbusEnvironment", .product(name: "Logging", package: "swift-log"), .product(name: "Yams", package: "Yams")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "MessagePath",
            dependencies: ["Digests", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Majordomo",
            dependencies: ["ZeroMQ", "MessagePath", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Clone",
            dependencies: ["ZeroMQ", "MessagePath", "WireCheck", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // Where a host runs and what it announces (run directory, host.json), and the FLOWBUS_*
        // variables it gives plugins: read here by the host, plugins and clients alike.
        .target(name: "FlowbusEnvironment", swiftSettings: strictSettings),
        // CRC-32C and the check that ends every envelope: read by FlowProtocol and the Clone server.
        .target(name: "CWireCheck"),
        .target(name: "WireCheck", dependencies: ["CWireCheck"], swiftSettings: strictSettings),
        .target(
            name: "FlowProtocol",
            dependencies: ["WireCheck", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "FlowHost",
            dependencies: [
                "ZeroMQ", "Majordomo", "Clone", "FlowProtocol", "MessagePath", "Supervision", "FlowbusEnvironment", "CFlowHost", "WireCheck",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "FlowChaos",
            dependencies: ["FlowHost", "FlowClient", "MessagePath", "FlowbusEnvironment", "Clone", "FlowProtocol", "Supervision"],
            swiftSettings: strictSettings
        ),
        // Simulated users playing journeys on the real app: plans, load models, histograms, reports.
        .target(
            name: "FlowSim",
            dependencies: [
                "Clone", "FlowClient", "FlowProtocol", "Majordomo", "MessagePath", "Supervision", "ZeroMQ",
                "Digests",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "flowbus",
            dependencies: [
                "FlowHost", "Majordomo", "Clone", "ZeroMQ", "FlowProtocol", "MessagePath", "Supervision",
                "FlowClient", "FlowTerminal", "FlowChaos", "FlowSim",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The plugin SDK: view models, coordinators, services and their runtimes on the bus.
        .target(
            name: "FlowKit",
            dependencies: ["ZeroMQ", "Majordomo", "Clone", "FlowProtocol", "FlowbusEnvironment", "MessagePath", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // The one way clients talk to the bus: sessions, intents, the session view, scripted journeys.
        .target(
            name: "FlowClient",
            dependencies: [
                "ZeroMQ", "Majordomo", "Clone", "FlowProtocol", "FlowbusEnvironment", "MessagePath",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strictSettings
        ),
        // ncursesw behind a few C functions, so no curses type or macro reaches Swift.
        .target(name: "CTerminal", linkerSettings: [.linkedLibrary("ncursesw")]),
        // The terminal client: screen forms, rendering on a canvas, keys, the ncurses device.
        .target(
            name: "FlowTerminal",
            dependencies: ["CTerminal", "FlowClient", "FlowProtocol", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // The example plugin.
        .executableTarget(
            name: "flowbus-echo",
            dependencies: ["Majordomo", "Clone", "FlowProtocol", "WireCheck", .product(name: "Logging", package: "swift-log")],
            path: "Plugins/Echo",
            swiftSettings: strictSettings
        ),
        .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ", "CProcessID", "FlowbusTesting"]),
        .testTarget(name: "MajordomoTests", dependencies: ["Majordomo", "ZeroMQ", "MessagePath", "FlowProtocol", "FlowbusTesting"]),
        .testTarget(name: "CloneTests", dependencies: ["Clone", "WireCheck", "ZeroMQ", "MessagePath", "FlowProtocol", "FlowbusTesting"]),
        .testTarget(
            name: "FlowProtocolTests",
            dependencies: ["FlowProtocol", "WireCheck", .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        .testTarget(name: "SupervisionTests", dependencies: ["Supervision"]),
        .testTarget(name: "DigestsTests", dependencies: ["Digests"]),
        .testTarget(name: "FlowHostTests", dependencies: ["FlowHost", "FlowbusTesting"]),
        .testTarget(name: "FlowChaosTests", dependencies: ["FlowChaos", "FlowHost", "FlowClient", "MessagePath"]),
        .testTarget(name: "FlowSimTests", dependencies: ["FlowSim", "FlowClient", "FlowbusTesting", .product(name: "Histogram", package: "hdrhistogram-swift")]),
        .testTarget(
            name: "FlowClientTests",
            dependencies: ["FlowClient", "FlowProtocol", "Clone", "Majordomo", "ZeroMQ", "MessagePath", "FlowbusTesting",
                .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        .testTarget(name: "FlowTerminalTests", dependencies: ["FlowTerminal", "FlowClient", "FlowKit", "FlowProtocol"]),
        .testTarget(name: "FlowKitTests", dependencies: [
            "FlowKit", "FlowProtocol", "Majordomo", "MessagePath", "Clone", "ZeroMQ", "FlowbusTesting", "Supervision",
            .product(name: "Logging", package: "swift-log"), .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        ]),
        // Shared fixtures of the tests that start real processes (the core's and every app's).
        .target(
            name: "FlowbusTesting",
            dependencies: [],
            swiftSettings: strictSettings
        ),
        // What the fuzzers (Fuzz/) run on each input; FlowbusFuzzingTests replays their seeds and
        // every input that once crashed (Fuzz/regressions) in the ordinary build.
        .target(
            name: "FlowbusFuzzing",
            dependencies: ["Majordomo", "Clone", "FlowProtocol", "WireCheck", "Supervision", "FlowChaos", "FlowHost", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: strictSettings
        ),
        .testTarget(name: "FlowbusFuzzingTests", dependencies: ["FlowbusFuzzing"]),
        .testTarget(name: "FlowbusTestingTests", dependencies: ["FlowbusTesting"]),
        .testTarget(
            name: "FlowbusCLITests",
            // The executables are dependencies so that `swift test` builds them beside the tests.
            dependencies: ["flowbus", "flowbus-echo", "FlowbusTesting", "FlowClient", "FlowHost", "ZeroMQ", "Majordomo", "Clone", "FlowProtocol", "MessagePath",
                .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
    ]
)

// The sample apps: plugin sets under Plugins/, each with its own library, executables and tests.
// The core above depends on none of them, and builds and tests without them: an app whose folder
// is absent is left out (scripts/check-core proves it).

if present("Plugins/AccountKit") {
    package.targets += [
        // Account rules and password storage shared by the sample apps (plugin-side: the core knows no accounts).
        .target(
            name: "AccountKit",
            dependencies: ["AppStore", "FlowKit", "FlowProtocol", "Digests"],
            path: "Plugins/AccountKit",
            swiftSettings: strictSettings
        ),
    ]
}
if present("Plugins/AppStore") {
    package.targets += [
        // libpq, PostgreSQL's C client (Debian's libpq-dev), for services replicas sharing one database.
        .systemLibrary(
            name: "CLibPQ",
            path: "Plugins/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The sample apps' durable records and the services' replies (a FlowKit ServiceReplyStore):
        // SQLite through GRDB in the host's run directory, or PostgreSQL through libpq for replicas.
        .target(
            name: "AppStore",
            dependencies: ["FlowKit", "CLibPQ", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Plugins/AppStore",
            exclude: ["Tests"],
            swiftSettings: strictSettings
        ),
        .testTarget(name: "AppStoreTests", dependencies: ["AppStore", "FlowKit", "FlowbusTesting", .product(name: "GRDB", package: "GRDB.swift")], path: "Plugins/AppStore/Tests"),
    ]
}
if present("Plugins/MoviesApp") {
    package.targets += [
        // The sample app of APP.md: domain, services, view models, coordinators (one library;
        // each process is a small executable below).
        .target(
            name: "MoviesApp",
            dependencies: [
                "FlowKit", "FlowProtocol", "AccountKit", "AppStore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Plugins/MoviesApp",
            exclude: ["Protocols", "Executables", "Tests", "ScreenTests", "EndToEndTests", "Journeys", "ClientScripts", "FaultPlans", "SimPlans", "manifest.yaml"],
            resources: [.copy("Resources/catalog.json"), .copy("Resources/schema.pb")],
            swiftSettings: strictSettings
        ),
        // The movies app's processes: each coordinator, each view-model worker and the services
        // run as their own process, from these three small executables (Plugins/MoviesApp/manifest.yaml).
        .executableTarget(
            name: "movies-coordinator",
            dependencies: ["FlowKit", "MoviesApp"],
            path: "Plugins/MoviesApp/Executables/movies-coordinator",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "movies-viewmodel",
            dependencies: ["FlowKit", "MoviesApp"],
            path: "Plugins/MoviesApp/Executables/movies-viewmodel",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "movies-services",
            dependencies: ["FlowKit", "MoviesApp", .product(name: "Logging", package: "swift-log")],
            path: "Plugins/MoviesApp/Executables/movies-services",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "MoviesAppTests",
            dependencies: ["MoviesApp", "AccountKit", "FlowKit", "FlowProtocol", "FlowClient"],
            path: "Plugins/MoviesApp/Tests"
        ),
        // The movies app's screens as the generic terminal client draws them from its view models' presentations.
        .testTarget(
            name: "MoviesAppScreenTests",
            dependencies: ["MoviesApp", "FlowTerminal", "FlowClient", "FlowKit", "FlowProtocol"],
            path: "Plugins/MoviesApp/ScreenTests"
        ),
        // The whole movies app as real processes: journeys, the terminal client under tmux, kill -9.
        .testTarget(
            name: "MoviesAppEndToEndTests",
            dependencies: ["flowbus", "flowbus-echo", "movies-coordinator", "movies-viewmodel", "movies-services", "FlowbusTesting",
                           "FlowClient", "FlowHost", "ZeroMQ", "Majordomo", "Clone", "FlowProtocol", "MessagePath", "MoviesApp",
                           .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            path: "Plugins/MoviesApp/EndToEndTests"
        ),
    ]
}
if present("Plugins/Photos") {
    package.targets += [
        // The second sample app (APP.md, "The second app: Photos"): its schema, catalog, domain and
        // services. Its executables, journeys, tests and manifest live beside it, outside the library.
        .target(
            name: "PhotosApp",
            dependencies: [
                "FlowKit", "FlowProtocol", "AccountKit", "AppStore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Plugins/Photos",
            exclude: ["Executables", "Protocols", "Journeys", "FaultPlans", "SimPlans", "Tests", "ScreenTests", "EndToEndTests", "manifest.yaml"],
            resources: [.copy("Resources/catalog.json"), .copy("Resources/schema.pb")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PhotosAppTests",
            dependencies: ["PhotosApp", "AccountKit", "AppStore", "FlowKit", "FlowProtocol", "FlowbusTesting"],
            path: "Plugins/Photos/Tests"
        ),
        // The Photos app's processes (Plugins/Photos/manifest.yaml), like the movies app's.
        .executableTarget(
            name: "photos-coordinator",
            dependencies: ["FlowKit", "PhotosApp"],
            path: "Plugins/Photos/Executables/photos-coordinator",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "photos-viewmodel",
            dependencies: ["FlowKit", "PhotosApp"],
            path: "Plugins/Photos/Executables/photos-viewmodel",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "photos-services",
            dependencies: ["FlowKit", "PhotosApp", .product(name: "Logging", package: "swift-log")],
            path: "Plugins/Photos/Executables/photos-services",
            swiftSettings: strictSettings
        ),
        // The Photos app's screens as the generic terminal client draws them from its view models' presentations.
        .testTarget(
            name: "PhotosAppScreenTests",
            dependencies: ["PhotosApp", "FlowTerminal", "FlowClient", "FlowKit", "FlowProtocol"],
            path: "Plugins/Photos/ScreenTests"
        ),
        // The Photos app as real processes under `flowbus up --app photos`, driven by its journeys.
        .testTarget(
            name: "PhotosAppEndToEndTests",
            // The executables are dependencies so that `swift test` builds them beside the tests.
            dependencies: ["flowbus", "photos-coordinator", "photos-viewmodel", "photos-services", "FlowbusTesting",
                           "FlowClient", "FlowHost", "FlowProtocol", "PhotosApp",
                           .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            path: "Plugins/Photos/EndToEndTests"
        ),
    ]
}
if present("Plugins/MoviesApp"), present("Plugins/Photos") {
    package.targets += [
        // A client written from Protocols/ alone (Tests/Interop/flow_client.py) drives both apps.
        .testTarget(
            name: "AppContractTests",
            dependencies: ["flowbus", "movies-coordinator", "movies-viewmodel", "movies-services",
                           "photos-coordinator", "photos-viewmodel", "photos-services", "FlowbusTesting"],
            path: "Plugins/ContractTests"
        ),
    ]
}
