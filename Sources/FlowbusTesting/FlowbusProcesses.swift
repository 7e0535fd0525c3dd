import Foundation

/// Runs the built `flowbus` and other programs for tests: the one way test targets (the core's
/// and each app's) start real processes.
public enum FlowbusProcesses {
    /// The package's root folder (this file is Sources/FlowbusTesting/FlowbusProcesses.swift).
    public static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The flowbus built with these tests: `$FLOWBUS_BIN`, else beside the test bundle in the same
    /// build folder (whatever `--scratch-path` was used), else in the default `.build/debug`.
    public static func flowbusExecutable() -> URL? {
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

    public static func executable(named name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":")
            .map { URL(fileURLWithPath: String($0)).appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    public struct Outcome: Sendable {
        public var status: Int32
        public var output: String

        public init(status: Int32, output: String) {
            self.status = status
            self.output = output
        }
    }

    /// Runs a process to completion with stdout and stderr captured together. The process is made,
    /// read and awaited on a dedicated thread, never on Swift's cooperative pool.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) async throws -> Outcome {
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
