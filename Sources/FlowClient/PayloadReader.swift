import FlowProtocol
import Foundation
import SwiftProtobuf

/// Reads an app's payload without the app's Swift types: the protobuf wire format, named by the
/// schema the app publishes at `/schema/<package>` (a FileDescriptorSet), into the values of its
/// protobuf JSON form (lowerCamelCase names, defaults left out, enums by name, int64 as numbers),
/// which `DataPath` walks.
public struct PayloadReader: Sendable {
    struct MessageType: Sendable {
        var fields: [Int32: Google_Protobuf_FieldDescriptorProto] = [:]
        var isMapEntry = false
    }

    var messages: [String: MessageType] = [:]
    var enums: [String: [Int32: String]] = [:]

    public init(schemas: some Sequence<AppSchema>) {
        for schema in schemas {
            for file in schema.set.file {
                let prefix = file.package.isEmpty ? "" : "." + file.package
                for message in file.messageType { index(message, prefix: prefix) }
                for type in file.enumType { enums[prefix + "." + type.name] = Self.names(of: type) }
            }
        }
    }

    private mutating func index(_ message: Google_Protobuf_DescriptorProto, prefix: String) {
        let name = prefix + "." + message.name
        var type = MessageType()
        type.isMapEntry = message.options.mapEntry
        for field in message.field { type.fields[field.number] = field }
        messages[name] = type
        for nested in message.nestedType { index(nested, prefix: name) }
        for nested in message.enumType { enums[name + "." + nested.name] = Self.names(of: nested) }
    }

    private static func names(of type: Google_Protobuf_EnumDescriptorProto) -> [Int32: String] {
        Dictionary(type.value.map { ($0.number, $0.name) }, uniquingKeysWith: { first, _ in first })
    }

    /// Whether the schemas define `kind` (a full protobuf name such as `shop.v1.Cart`).
    public func knows(_ kind: String) -> Bool { messages["." + kind] != nil }

    /// The payload's JSON form, nil when the kind is unknown or the bytes do not decode.
    public func object(kind: String, bytes: Data) -> [String: Any]? {
        guard messages["." + kind] != nil else { return nil }
        return try? decode(Array(bytes)[...], as: "." + kind)
    }

    struct Malformed: Error {}

    func decode(_ bytes: ArraySlice<UInt8>, as typeName: String) throws -> [String: Any] {
        guard let type = messages[typeName] else { throw Malformed() }
        var reader = WireReader(bytes: bytes)
        var object: [String: Any] = [:]
        while !reader.atEnd {
            let key = try reader.varint()
            let number = Int32(truncatingIfNeeded: key >> 3)
            let wire = Int(key & 7)
            let raw = try reader.field(wire: wire)
            guard let field = type.fields[number] else { continue }
            let name = field.jsonName.isEmpty ? field.name : field.jsonName
            if field.label == .repeated {
                if case .bytes(let chunk) = raw, Self.isPackable(field.type) {
                    var packed = WireReader(bytes: chunk)
                    var values = object[name] as? [Any] ?? []
                    while !packed.atEnd { values.append(try value(of: field, try packed.field(wire: Self.wireType(of: field.type)))) }
                    object[name] = values
                } else if let entry = messages[field.typeName], entry.isMapEntry, case .bytes(let chunk) = raw {
                    let pair = try decode(chunk, as: field.typeName)
                    var map = object[name] as? [String: Any] ?? [:]
                    map[pair["key"].map { DataPath.text($0) } ?? ""] = pair["value"] ?? ""
                    object[name] = map
                } else {
                    object[name] = (object[name] as? [Any] ?? []) + [try value(of: field, raw)]
                }
            } else {
                object[name] = try value(of: field, raw)
            }
        }
        return object
    }

    func value(of field: Google_Protobuf_FieldDescriptorProto, _ raw: WireReader.Raw) throws -> Any {
        switch (field.type, raw) {
        case (.bool, .varint(let v)): return v != 0
        case (.int32, .varint(let v)): return Int(Int32(truncatingIfNeeded: v))
        case (.int64, .varint(let v)): return Int(Int64(bitPattern: v))
        case (.uint32, .varint(let v)): return Int(UInt32(truncatingIfNeeded: v))
        case (.uint64, .varint(let v)): return v
        case (.sint32, .varint(let v)), (.sint64, .varint(let v)): return Int(Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1))
        case (.enum, .varint(let v)): return enums[field.typeName]?[Int32(truncatingIfNeeded: v)] ?? Int(Int32(truncatingIfNeeded: v))
        case (.fixed64, .fixed64(let v)): return v
        case (.sfixed64, .fixed64(let v)): return Int(Int64(bitPattern: v))
        case (.double, .fixed64(let v)): return Double(bitPattern: v)
        case (.fixed32, .fixed32(let v)): return Int(v)
        case (.sfixed32, .fixed32(let v)): return Int(Int32(bitPattern: v))
        case (.float, .fixed32(let v)): return Double(Float(bitPattern: v))
        case (.string, .bytes(let chunk)): return String(decoding: chunk, as: UTF8.self)
        case (.bytes, .bytes(let chunk)): return Data(chunk).base64EncodedString()
        case (.message, .bytes(let chunk)), (.group, .bytes(let chunk)): return try decode(chunk, as: field.typeName)
        default: throw Malformed()
        }
    }

    static func isPackable(_ type: Google_Protobuf_FieldDescriptorProto.TypeEnum) -> Bool {
        ![.string, .bytes, .message, .group].contains(type)
    }

    static func wireType(of type: Google_Protobuf_FieldDescriptorProto.TypeEnum) -> Int {
        switch type {
        case .double, .fixed64, .sfixed64: 1
        case .float, .fixed32, .sfixed32: 5
        default: 0
        }
    }
}

/// The protobuf wire format, one field at a time.
struct WireReader {
    enum Raw {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        case bytes(ArraySlice<UInt8>)
    }

    var bytes: ArraySlice<UInt8>
    var atEnd: Bool { bytes.isEmpty }

    mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while let byte = bytes.popFirst() {
            guard shift < 64 else { throw PayloadReader.Malformed() }
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
        throw PayloadReader.Malformed()
    }

    mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, bytes.count >= count else { throw PayloadReader.Malformed() }
        defer { bytes = bytes.dropFirst(count) }
        return bytes.prefix(count)
    }

    mutating func field(wire: Int) throws -> Raw {
        switch wire {
        case 0: return .varint(try varint())
        case 1: return .fixed64(try take(8).reversed().reduce(0) { $0 << 8 | UInt64($1) })
        case 2:
            let length = try varint()
            guard length <= UInt64(bytes.count) else { throw PayloadReader.Malformed() }
            return .bytes(try take(Int(length)))
        case 5: return .fixed32(try take(4).reversed().reduce(0) { $0 << 8 | UInt32($1) })
        default: throw PayloadReader.Malformed()
        }
    }
}
