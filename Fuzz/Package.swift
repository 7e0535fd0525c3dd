// swift-tools-version:6.0
import PackageDescription

// Flowbus's fuzzer: one libFuzzer executable running any decoder of the main package
// (FuzzTarget). A package of its own because it builds with the fuzzer's instrumentation, which
// the main build must not carry. Build and run it with scripts/fuzz (it adds -sanitize=fuzzer).
let package = Package(
    name: "flowbus-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "flowbus", path: "..")],
    targets: [
        // libFuzzer's driver function, declared for Swift.
        .target(name: "CLibFuzzer"),
        .executableTarget(
            name: "flowbus-fuzz",
            dependencies: ["CLibFuzzer", .product(name: "FlowbusFuzzing", package: "flowbus")]
        ),
    ]
)
