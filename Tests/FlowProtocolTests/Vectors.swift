import FlowProtocol
import Foundation
import SwiftProtobuf

/// Finds `Protocols/vectors` from this file's path and reads its files.
enum Vectors {
    static let directory: URL = {
        guard let url = FrameVectors.directory(nearFile: #filePath) else {
            fatalError("Protocols/vectors/README.md not found above \(#filePath)")
        }
        return url
    }()

    static func names(withExtension ext: String) -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix("." + ext) }.map { String($0.dropLast(ext.count + 1)) }.sorted()
    }

    static func bytes(_ name: String, _ ext: String = "pb") throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent("\(name).\(ext)")))
    }

    static func text(_ name: String, _ ext: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent("\(name).\(ext)"), encoding: .utf8)
    }

    static func frames(_ name: String) throws -> FrameVector {
        try FrameVectors.load(directory.appendingPathComponent("\(name).frames"))
    }

    /// The value of a `# name: value` header line of a text file.
    static func header(_ name: String, in text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix("# \(name): ") {
            return String(line.dropFirst(name.count + 4))
        }
        return nil
    }

    static func deterministic(_ message: some SwiftProtobuf.Message) throws -> [UInt8] {
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        return try message.serializedBytes(options: options)
    }
}
