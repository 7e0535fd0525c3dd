// swift-tools-version:6.1
import PackageDescription

// A gRPC baseline for flowbus-bench's `grpc` benchmark, in a package of its own so that the
// Benchmarks package (and Flowbus itself) never builds gRPC, SwiftNIO and HTTP/2.
// Run alone with: swift run -c release --package-path Benchmarks/GRPCBaseline grpc-baseline [--quick]
let package = Package(
    name: "grpc-baseline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "grpc-baseline", targets: ["grpc-baseline"]),
    ],
    dependencies: [
        // Exact versions: the figures name the gRPC Swift release they were measured with.
        .package(url: "https://github.com/grpc/grpc-swift-2.git", exact: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", exact: "2.9.2"),
    ],
    targets: [
        .executableTarget(
            name: "grpc-baseline",
            dependencies: [
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
