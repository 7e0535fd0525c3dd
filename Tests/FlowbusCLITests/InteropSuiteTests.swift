import Foundation
import Testing

/// Runs the Python interoperability suite (Tests/Interop): a 7/MDP client and worker and a 12/CHP agent
/// written from the RFCs alone must work against `flowbus up` unchanged.
@Suite("Interop suite")
struct InteropSuiteTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("Python 7/MDP and 12/CHP peers written from the RFCs work against flowbus up", .timeLimit(.minutes(3)))
    func pythonPeersWorkAgainstTheHost() async throws {
        let python = try #require(Self.executable(named: "python3"), "python3 is not on PATH: run scripts/setup")
        let check = try await Self.run(python, ["-c", "import zmq, pytest"])
        try #require(
            check.status == 0,
            "python3 cannot import pyzmq or pytest: run scripts/setup (pip install pyzmq pytest)\n\(check.output)"
        )
        let flowbus = try #require(
            Self.flowbusExecutable(),
            "no flowbus executable at $FLOWBUS_BIN, beside the test bundle or at \(Self.repository.path)/.build/debug/flowbus: build first: swift build"
        )

        let interop = Self.repository.appendingPathComponent("Tests/Interop").path
        let suite = try await Self.run(
            python, ["-m", "pytest", interop, "-q", "-p", "no:cacheprovider"],
            environment: ["FLOWBUS_BIN": flowbus.path, "PYTHONDONTWRITEBYTECODE": "1"]
        )
        #expect(suite.status == 0, "the interop suite failed (flowbus at \(flowbus.path)):\n\(suite.output)")
    }

    /// The flowbus built with these tests: it sits beside the test bundle in the same build folder
    /// (whatever `--scratch-path` was used), else in the default `.build/debug`.
    static func flowbusExecutable() -> URL? {
        var candidates: [URL] = []
        if let configured = ProcessInfo.processInfo.environment["FLOWBUS_BIN"] {
            let chosen = URL(fileURLWithPath: configured)
            return FileManager.default.isExecutableFile(atPath: chosen.path) ? chosen : nil
        }
        let running = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        candidates.append(running.deletingLastPathComponent().appendingPathComponent("flowbus"))
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("flowbus"))
        }
        candidates.append(repository.appendingPathComponent(".build/debug/flowbus"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    static func executable(named name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":")
            .map { URL(fileURLWithPath: String($0)).appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    struct Outcome {
        var status: Int32
        var output: String
    }

    /// Runs a process to completion with stdout and stderr captured together. The process is made,
    /// read and awaited on a dedicated thread, never on Swift's cooperative pool.
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) async throws -> Outcome {
        let environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                let process = Process()
                process.executableURL = executable
                process.arguments = arguments
                process.environment = environment
                process.standardInput = FileHandle.nullDevice
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = pipe
                do {
                    try process.run()
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: Outcome(
                    status: process.terminationStatus,
                    output: String(decoding: data, as: UTF8.self)
                ))
            }
        }
    }
}
