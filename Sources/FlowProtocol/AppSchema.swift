import Foundation
import SwiftProtobuf

/// An app's payload schemas as one serialized `google.protobuf.FileDescriptorSet` (protoc
/// `--descriptor_set_out --include_imports`), published at `/schema/<package>` so that a client
/// that never saw the app's code can read its payloads (Protocols/README.md §12).
public struct AppSchema: Sendable, Equatable {
    /// The protobuf package of the app's payloads, e.g. `shop.v1`.
    public let package: String
    public let set: Google_Protobuf_FileDescriptorSet

    /// Reads a descriptor set and checks that it defines messages of `package`.
    public init(package: String, serialized bytes: Data) throws(SchemaError) {
        let set: Google_Protobuf_FileDescriptorSet
        do {
            set = try Google_Protobuf_FileDescriptorSet(serializedBytes: bytes)
        } catch {
            throw SchemaError("the schema of \(package) is not a serialized FileDescriptorSet (\(error)); regenerate it with scripts/generate-protos.sh")
        }
        guard set.file.contains(where: { $0.package == package }) else {
            throw SchemaError("the schema given for \(package) defines only \(set.file.map(\.package).joined(separator: ", ")); regenerate it with scripts/generate-protos.sh")
        }
        self.package = package
        self.set = set
    }

    /// The schema a Clone value under `/schema/<package>` publishes, nil when the key or value is
    /// not one (not an Envelope holding a FileDescriptorSet of that package).
    public static func published(key: String, value: [UInt8]) -> AppSchema? {
        guard key.hasPrefix(keyPrefix), let envelope = try? Envelope.decodeChecked(value),
              envelope.holds(Google_Protobuf_FileDescriptorSet.self) else { return nil }
        return try? AppSchema(package: String(key.dropFirst(keyPrefix.count)), serialized: envelope.payload)
    }

    /// Where apps' schemas are published: `/schema/<package>`.
    public static let keyPrefix = "/schema/"

    /// Reads the descriptor set at `url` (an app's `Resources/schema.pb`).
    public init(package: String, contentsOf url: URL) throws(SchemaError) {
        let bytes: Data
        do {
            bytes = try Data(contentsOf: url)
        } catch {
            throw SchemaError("cannot read the schema of \(package) at \(url.path): \(error)")
        }
        try self.init(package: package, serialized: bytes)
    }

    /// The Clone key the schema is published under.
    public var cloneKey: CloneKey { .appSchema(package: package) }

    /// The Clone key the schema is published under, as text.
    public var key: String { cloneKey.text }

    /// The package of a payload kind: everything before its last dot (`shop.v1.Cart` → `shop.v1`).
    public static func package(of kind: String) -> String {
        guard let dot = kind.lastIndex(of: ".") else { return "" }
        return String(kind[..<dot])
    }
}

public struct SchemaError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
