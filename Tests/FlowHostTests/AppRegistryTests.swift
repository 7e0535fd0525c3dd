import FlowHost
import FlowbusTesting
import Foundation
import Testing

/// `flowbus up --app NAME` finds an app's manifest through the package's Plugins/apps.yaml.
@Suite("App registry")
struct AppRegistryTests {
    /// A package folder with Plugins/apps.yaml naming two apps, and a binary folder deep below it.
    static func package() throws -> (root: URL, binaries: URL) {
        let root = URL(fileURLWithPath: TestScratch.directory("fbapps"))
        let binaries = root.appendingPathComponent(".build/x86_64-unknown-linux-gnu/debug")
        try FileManager.default.createDirectory(at: binaries, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("Plugins"), withIntermediateDirectories: true)
        try Data("""
        default: shop
        apps:
          shop: Shop/manifest.yaml
          garden: Garden/manifest.yaml
        """.utf8).write(to: root.appendingPathComponent("Plugins/apps.yaml"))
        return (root, binaries)
    }

    @Test func theRegistryIsFoundUpwardFromTheBinaryAndNamesEachManifest() throws {
        let (root, binaries) = try Self.package()
        defer { try? FileManager.default.removeItem(at: root) }
        let registry = try AppRegistry.locate(executableDirectory: binaries.path, environment: [:], currentDirectory: "/")
        #expect(registry.defaultApp == "shop")
        #expect(try registry.manifest(for: nil).path == root.appendingPathComponent("Plugins/Shop/manifest.yaml").standardizedFileURL.path)
        #expect(try registry.manifest(for: "garden").lastPathComponent == "manifest.yaml")
        #expect(throws: HostError.self) { try registry.manifest(for: "zoo") }
        do {
            _ = try registry.manifest(for: "zoo")
        } catch {
            #expect("\(error)".contains("there is no app \"zoo\"; the apps are garden, shop"))
        }
    }

    @Test func flowbusAppsNamesAnotherRegistryAndAMissingOneSaysWhatToDo() throws {
        let (root, _) = try Self.package()
        defer { try? FileManager.default.removeItem(at: root) }
        let named = root.appendingPathComponent("Plugins/apps.yaml").path
        let registry = try AppRegistry.locate(executableDirectory: "/", environment: ["FLOWBUS_APPS": named], currentDirectory: "/")
        #expect(registry.file.path == named)
        #expect {
            try AppRegistry.locate(executableDirectory: "/nowhere", environment: [:], currentDirectory: "/")
        } throws: { error in
            "\(error)".contains("pass --manifest FILE, or set FLOWBUS_APPS")
        }
    }

    @Test func aDefaultThatIsNotListedIsRefused() {
        #expect {
            try AppRegistry(file: URL(fileURLWithPath: "/x/apps.yaml"), yaml: "default: zoo\napps:\n  shop: Shop/manifest.yaml\n")
        } throws: { error in
            "\(error)".contains("names zoo as its default app, but lists only shop")
        }
    }
}
