import Foundation
import Testing
@testable import Supervision

/// A manifest that must be refused, and where and why.
struct RefusedManifest: CustomTestStringConvertible, Sendable {
    let yaml: String
    let location: String
    let problem: String
    let remedy: String

    var testDescription: String { "\(location): \(problem)" }
}

private let plugin = "plugins:\n  - { name: echo, command: /bin/true }"

@Suite struct ManifestValidationTests {
    @Test(arguments: [
        RefusedManifest(yaml: "supervisr: {}\n\(plugin)", location: "supervisr",
                        problem: "unknown key `supervisr`", remedy: "supervisor, plugins"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo, command: x, restarts: 3 }", location: "plugins[0].restarts",
                        problem: "unknown key `restarts`", remedy: "replicas"),
        RefusedManifest(yaml: "supervisor: { backoff: { initial: 1s, maximum: 2s } }\n\(plugin)",
                        location: "supervisor.backoff.maximum", problem: "unknown key", remedy: "initial, max"),
        RefusedManifest(yaml: "supervisor: { period: 10 }\n\(plugin)", location: "supervisor.period",
                        problem: "`10` is not a duration", remedy: "250ms, 5s, 2m or 1h"),
        RefusedManifest(yaml: "supervisor: { shutdown_timeout: soon }\n\(plugin)", location: "supervisor.shutdown_timeout",
                        problem: "`soon` is not a duration", remedy: "whole number"),
        RefusedManifest(yaml: "supervisor: { period: 0s }\n\(plugin)", location: "supervisor.period",
                        problem: "longer than zero", remedy: "10s"),
        RefusedManifest(yaml: "supervisor: { intensity: -1 }\n\(plugin)", location: "supervisor.intensity",
                        problem: "negative", remedy: "0 or more"),
        RefusedManifest(yaml: "supervisor: { intensity: many }\n\(plugin)", location: "supervisor.intensity",
                        problem: "expected a whole number", remedy: "a whole number"),
        RefusedManifest(yaml: "supervisor: { backoff: { initial: 2s, max: 1s } }\n\(plugin)",
                        location: "supervisor.backoff.max", problem: "1s is shorter than initial (2s)", remedy: "at least"),
        RefusedManifest(yaml: "supervisor: { intensity: 1 }", location: "",
                        problem: "missing key `plugins`", remedy: "plugins: []"),
        RefusedManifest(yaml: "plugins: { name: echo }", location: "plugins",
                        problem: "expected a list", remedy: "a list"),
        RefusedManifest(yaml: "plugins:\n  - { command: /bin/true }", location: "plugins[0]",
                        problem: "missing key `name`", remedy: "lowercase letters"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo }", location: "plugins[0]",
                        problem: "missing key `command`", remedy: "executable"),
        RefusedManifest(yaml: "plugins:\n  - { name: Echo_1, command: x }", location: "plugins[0].name",
                        problem: "`Echo_1` is not a valid plugin name", remedy: "lowercase letters, digits and dashes"),
        RefusedManifest(yaml: "plugins:\n  - { name: '', command: x }", location: "plugins[0].name",
                        problem: "not a valid plugin name", remedy: "lowercase"),
        RefusedManifest(yaml: "\(plugin)\n  - { name: b, command: x }\n  - { name: echo, command: y }",
                        location: "plugins[2].name", problem: "`echo` is already the name of plugins[0]",
                        remedy: "replicas"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo, command: '  ' }", location: "plugins[0].command",
                        problem: "is empty (plugin echo)", remedy: "executable"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo, command: x, restart: always }", location: "plugins[0].restart",
                        problem: "unknown restart policy `always`", remedy: "permanent, transient, temporary"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo, command: x, replicas: 0 }", location: "plugins[0].replicas",
                        problem: "0 is out of range", remedy: "between 1 and 256"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo, command: x, replicas: two }", location: "plugins[0].replicas",
                        problem: "expected a whole number", remedy: "whole number"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo, command: x, args: --verbose }", location: "plugins[0].args",
                        problem: "expected a list", remedy: "a list"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo, command: x, env: { FLOWBUS_REPLICA: '3' } }",
                        location: "plugins[0].env.FLOWBUS_REPLICA", problem: "set by the supervisor", remedy: "remove it"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo, command: x, shutdown_timeout: 3 }",
                        location: "plugins[0].shutdown_timeout", problem: "`3` is not a duration", remedy: "5s"),
        RefusedManifest(yaml: "  \n", location: "", problem: "the manifest is empty", remedy: "plugins:"),
        RefusedManifest(yaml: "plugins: [ { name: echo", location: "line 2, column 1",
                        problem: "is not valid YAML: did not find expected ',' or '}'", remedy: "YAML syntax"),
        RefusedManifest(yaml: "plugins: []\nplugins: []", location: "line 1",
                        problem: "repeats the key plugins", remedy: "one of each"),
        RefusedManifest(yaml: "plugins:\n  - { name: echo, command: x, env: [A] }", location: "plugins[0].env",
                        problem: "expected a mapping", remedy: "a mapping"),
    ])
    func refuses(_ case: RefusedManifest) {
        let error = #expect(throws: ManifestError.self) {
            try Manifest.parse(yaml: `case`.yaml, baseDirectory: URL(fileURLWithPath: "/tmp"))
        }
        #expect(error?.location == `case`.location, "\(String(describing: error))")
        #expect(error?.problem.contains(`case`.problem) == true, "\(String(describing: error))")
        #expect(error?.remedy.contains(`case`.remedy) == true, "\(String(describing: error))")
    }

    @Test func explainsWhatIsWrongWhereAndWhatToDo() {
        let error = #expect(throws: ManifestError.self) {
            try Manifest.parse(yaml: "plugins:\n  - { name: echo, command: x, restart: always }", baseDirectory: URL(fileURLWithPath: "/"))
        }
        #expect(error?.description == "manifest, plugins[0].restart: unknown restart policy `always` — use one of permanent, transient, temporary")
    }
}
