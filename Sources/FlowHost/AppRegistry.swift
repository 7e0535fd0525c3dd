import Foundation
import Yams

/// The apps a package builds, read from its `Plugins/apps.yaml`: each app's name and manifest,
/// and the one `flowbus up` and `flowbus demo` start when neither `--app` nor `--manifest` is
/// given. The core names no app; this file does.
///
/// ```yaml
/// default: NAME
/// apps:
///   NAME: Folder/manifest.yaml   # relative to the apps.yaml
/// ```
public struct AppRegistry: Sendable, Equatable {
    public let file: URL
    public let defaultApp: String
    /// Each app's manifest, by name.
    public let manifests: [String: URL]

    public static let environmentVariable = "FLOWBUS_APPS"

    public init(file: URL, yaml: String) throws(HostError) {
        struct Document: Decodable {
            var `default`: String
            var apps: [String: String]
        }
        let document: Document
        do {
            document = try YAMLDecoder().decode(Document.self, from: yaml)
        } catch {
            throw .appRegistry("\(file.path) is not an app registry (\(error)); it needs `default: NAME` and `apps: {NAME: Folder/manifest.yaml}`")
        }
        let folder = file.deletingLastPathComponent()
        manifests = document.apps.mapValues { folder.appendingPathComponent($0).standardizedFileURL }
        guard manifests[document.default] != nil else {
            throw .appRegistry("\(file.path) names \(document.default) as its default app, but lists only \(document.apps.keys.sorted().joined(separator: ", ")); add it under `apps:` or change `default:`")
        }
        self.file = file
        self.defaultApp = document.default
    }

    /// The registry named by `FLOWBUS_APPS`, else the `Plugins/apps.yaml` of the package this
    /// binary was built in (found upward from `executableDirectory`), else one under the
    /// current directory.
    public static func locate(
        executableDirectory: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        currentDirectory: String = FileManager.default.currentDirectoryPath
    ) throws(HostError) -> AppRegistry {
        if let named = environment[environmentVariable], !named.isEmpty {
            return try load(URL(fileURLWithPath: named))
        }
        var folder = URL(fileURLWithPath: executableDirectory).standardizedFileURL
        for _ in 0..<8 {
            let candidate = folder.appendingPathComponent("Plugins/apps.yaml")
            if FileManager.default.isReadableFile(atPath: candidate.path) { return try load(candidate) }
            let parent = folder.deletingLastPathComponent()
            if parent.path == folder.path { break }
            folder = parent
        }
        let here = URL(fileURLWithPath: currentDirectory).appendingPathComponent("Plugins/apps.yaml")
        if FileManager.default.isReadableFile(atPath: here.path) { return try load(here) }
        throw .appRegistry("no app registry (Plugins/apps.yaml) was found above \(executableDirectory) or in \(currentDirectory); pass --manifest FILE, or set \(environmentVariable) to an apps.yaml")
    }

    static func load(_ file: URL) throws(HostError) -> AppRegistry {
        let yaml: String
        do {
            yaml = try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw .appRegistry("cannot read the app registry \(file.path): \(error); check \(environmentVariable) or the package's Plugins/apps.yaml")
        }
        return try AppRegistry(file: file, yaml: yaml)
    }

    /// The manifest of `app` (the default when nil).
    public func manifest(for app: String?) throws(HostError) -> URL {
        let name = app ?? defaultApp
        guard let url = manifests[name] else {
            throw .appRegistry("there is no app \"\(name)\"; the apps are \(manifests.keys.sorted().joined(separator: ", ")) (\(file.path))")
        }
        return url
    }
}
