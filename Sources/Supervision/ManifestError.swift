/// A manifest that cannot run: what is wrong, where, and what to do about it.
public struct ManifestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The manifest file, when it was loaded from one.
    public var file: String?
    /// Where in the manifest: a key path such as `plugins[1].restart`, or a line and column.
    public var location: String
    public var problem: String
    public var remedy: String

    public init(file: String? = nil, location: String, problem: String, remedy: String) {
        self.file = file
        self.location = location
        self.problem = problem
        self.remedy = remedy
    }

    public var description: String {
        let source = file.map { "manifest \($0)" } ?? "manifest"
        let place = location.isEmpty ? source : "\(source), \(location)"
        return "\(place): \(problem) — \(remedy)"
    }
}

extension ManifestError {
    /// `plugins[1].backoff.initial` from a decoder's coding path.
    static func location(of path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text
    }

    static func at(_ path: [any CodingKey], problem: String, remedy: String) -> ManifestError {
        ManifestError(location: location(of: path), problem: problem, remedy: remedy)
    }
}
