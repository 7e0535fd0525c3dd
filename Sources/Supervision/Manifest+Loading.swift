import Foundation
import Yams

extension Manifest {
    /// Reads and validates a manifest file; relative commands resolve against its folder.
    public static func load(from url: URL) throws(ManifestError) -> Manifest {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw ManifestError(
                file: url.path, location: "",
                problem: "cannot be read (\(error.localizedDescription))",
                remedy: "check that the file exists, is readable and is UTF-8 text"
            )
        }
        do {
            return try parse(yaml: text, baseDirectory: url.deletingLastPathComponent())
        } catch var error {
            error.file = url.path
            throw error
        }
    }

    /// Parses and validates manifest YAML; relative commands resolve against `baseDirectory`.
    public static func parse(yaml: String, baseDirectory: URL) throws(ManifestError) -> Manifest {
        guard yaml.contains(where: { !$0.isWhitespace }) else {
            throw ManifestError(location: "", problem: "the manifest is empty", remedy: "list the plugins to run under `plugins:`")
        }
        let document: ManifestDocument
        do {
            document = try YAMLDecoder().decode(ManifestDocument.self, from: yaml)
        } catch {
            throw ManifestError(reading: error)
        }
        let manifest = Manifest(supervisor: document.supervisor, plugins: document.plugins, app: document.app, baseDirectory: baseDirectory)
        try manifest.validate()
        return manifest
    }

    /// The manifest as YAML that `parse` reads back to an equal value.
    public func yaml() throws -> String {
        try YAMLEncoder().encode(ManifestDocument(app: app, supervisor: supervisor, plugins: plugins))
    }
}

extension ManifestError {
    /// Yams wraps what the parser and our decoders throw in `dataCorrupted`; unwrap it first.
    init(reading error: any Error) {
        switch error {
        case let error as ManifestError:
            self = error
        case let error as YamlError:
            self.init(yaml: error)
        case let DecodingError.dataCorrupted(context) where context.underlyingError != nil:
            self.init(reading: context.underlyingError!)
        case let error as DecodingError:
            self.init(decoding: error)
        default:
            self = ManifestError(location: "", problem: "cannot be read as YAML (\(error))", remedy: "fix the YAML syntax")
        }
    }

    init(decoding error: DecodingError) {
        switch error {
        case let .keyNotFound(key, context):
            self = .at(context.codingPath, problem: "missing key `\(key.stringValue)`", remedy: Self.remedyForMissing(key.stringValue))
        case let .valueNotFound(_, context):
            self = .at(context.codingPath, problem: "has no value", remedy: "give it a value or remove the key")
        case let .typeMismatch(type, context):
            self = .at(context.codingPath, problem: "expected \(Self.phrase(for: type))", remedy: "write \(Self.phrase(for: type)) here")
        case let .dataCorrupted(context):
            self = .at(context.codingPath, problem: context.debugDescription, remedy: "fix the value")
        @unknown default:
            self = ManifestError(location: "", problem: "\(error)", remedy: "fix the manifest")
        }
    }

    init(yaml error: YamlError) {
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _), let .composer(context, problem, mark, _):
            let during = context.map { " (\($0.text) from line \($0.mark.line))" } ?? ""
            self = ManifestError(location: "line \(mark.line), column \(mark.column)", problem: "is not valid YAML: \(problem)\(during)",
                                 remedy: "fix the YAML syntax there")
        case let .duplicatedKeysInMapping(duplicates, context):
            self = ManifestError(location: "line \(context.mark.line)", problem: "repeats the key \(duplicates.joined(separator: ", "))",
                                 remedy: "keep one of each key per mapping")
        default:
            self = ManifestError(location: "", problem: "is not valid YAML: \(error)", remedy: "fix the YAML syntax")
        }
    }

    private static func remedyForMissing(_ key: String) -> String {
        switch key {
        case "plugins": "add a `plugins:` list (write `plugins: []` to run none)"
        case "name": "give the plugin a name of lowercase letters, digits and dashes"
        case "command": "give the plugin the executable to run"
        default: "add it"
        }
    }

    private static func phrase(for type: Any.Type) -> String {
        if type == Int.self { return "a whole number" }
        if type == String.self { return "text" }
        // Yams names its own node types (Node.Mapping, Node.Sequence) in type mismatches.
        let name = String(describing: type)
        if name.contains("Mapping") || name.hasPrefix("Dictionary") || name.hasPrefix("[String :") { return "a mapping" }
        if name.contains("Sequence") || name.hasPrefix("Array") || name.hasPrefix("[") { return "a list" }
        return "a \(name)"
    }
}
