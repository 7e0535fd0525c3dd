import Foundation
import Testing
@testable import Supervision

@Suite struct ManifestTests {
    let base = URL(fileURLWithPath: "/srv/flowbus")

    @Test func parsesEveryField() throws {
        let manifest = try Manifest.parse(yaml: """
            supervisor:
              intensity: 5        # at most 5 restarts ...
              period: 10s
              backoff: { initial: 100ms, max: 5s }
              shutdown_timeout: 5s
            plugins:
              - name: echo
                command: flowbus-echo
                args: ["--greeting", "hi", 3]
                env: { KEY: value, PORT: 5555 }
                restart: transient
                replicas: 2
                shutdown_timeout: 3s
              - name: signin-vm
                command: ./bin/signin
            """, baseDirectory: base)
        #expect(manifest.supervisor == SupervisorSettings(
            intensity: 5, period: .seconds(10),
            backoff: Backoff(initial: .milliseconds(100), max: .seconds(5)), shutdownTimeout: .seconds(5)))
        #expect(manifest.plugins == [
            PluginSpec(name: "echo", command: "flowbus-echo", args: ["--greeting", "hi", "3"],
                       env: ["KEY": "value", "PORT": "5555"], restart: .transient, replicas: 2,
                       shutdownTimeout: .seconds(3)),
            PluginSpec(name: "signin-vm", command: "./bin/signin"),
        ])
        #expect(manifest.baseDirectory == base)
    }

    @Test func fillsDefaults() throws {
        let manifest = try Manifest.parse(yaml: "plugins:\n  - { name: a, command: /bin/true }\n", baseDirectory: base)
        #expect(manifest.supervisor == SupervisorSettings())
        #expect(manifest.plugins[0].restart == .permanent)
        #expect(manifest.plugins[0].replicas == 1)
        #expect(manifest.plugins[0].shutdownTimeout == nil)
    }

    @Test func acceptsNoPlugins() throws {
        #expect(try Manifest.parse(yaml: "plugins: []", baseDirectory: base).plugins.isEmpty)
    }

    @Test(arguments: [
        ("250ms", Duration.milliseconds(250)), ("5s", .seconds(5)), ("2m", .seconds(120)),
        ("0ms", .zero), (" 7s ", .seconds(7)),
    ])
    func readsDurations(text: String, expected: Duration) {
        #expect(DurationText.parse(text) == expected)
        #expect(DurationText.parse(DurationText.format(expected)) == expected)
    }

    @Test(arguments: ["10", "s", "1.5s", "-1s", "5 s", "3d", "ten seconds", ""])
    func refusesMalformedDurations(text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test func roundTripsThroughYAML() throws {
        let manifest = try Manifest.parse(yaml: """
            supervisor: { intensity: 2, period: 1m, backoff: { initial: 50ms, max: 2s }, shutdown_timeout: 1500ms }
            plugins:
              - { name: echo, command: flowbus-echo, args: [a], env: { K: v }, restart: temporary, replicas: 3, shutdown_timeout: 1s }
            """, baseDirectory: base)
        #expect(try Manifest.parse(yaml: manifest.yaml(), baseDirectory: base) == manifest)
    }

    @Test func loadsFromFileAndResolvesAgainstItsFolder() throws {
        let directory = try TestDirectory()
        let file = directory.url.appendingPathComponent("flowbus.yaml")
        try "plugins:\n  - { name: a, command: bin/a }\n".write(to: file, atomically: true, encoding: .utf8)
        let manifest = try Manifest.load(from: file)
        #expect(manifest.baseDirectory.standardizedFileURL.path == directory.url.standardizedFileURL.path)
        let locator = CommandLocator(baseDirectory: manifest.baseDirectory, commandSearchPath: [], environmentPATH: nil)
        #expect(try locator.locate("bin/a", plugin: "a") == directory.url.appendingPathComponent("bin/a").standardizedFileURL.path)
    }

    @Test func namesTheFileInErrors() throws {
        let directory = try TestDirectory()
        let file = directory.url.appendingPathComponent("broken.yaml")
        try "plugins:\n  - { name: A, command: x }\n".write(to: file, atomically: true, encoding: .utf8)
        let error = #expect(throws: ManifestError.self) { try Manifest.load(from: file) }
        #expect(error?.file == file.path)
        #expect(error?.description.hasPrefix("manifest \(file.path), plugins[0].name: ") == true)

        let missing = #expect(throws: ManifestError.self) {
            try Manifest.load(from: directory.url.appendingPathComponent("absent.yaml"))
        }
        #expect(missing?.problem.hasPrefix("cannot be read") == true)
    }
}
