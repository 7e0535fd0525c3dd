import Foundation
import SwiftProtobuf
import WireCheck

/// Protobuf's binary encoding in one pass, the same bytes as SwiftProtobuf's `serializedBytes()`.
///
/// SwiftProtobuf sizes a message before it writes it, and sizes each nested message again where
/// it writes its length: a message four levels down (a presentation's list item inside a
/// component inside the presentation inside a view state) is sized five times and written once.
/// A view model publishes such a state with every change, and the sizing was most of its
/// encoding. This writer puts a one-byte length before a nested message, writes the message, and
/// fills the length in after; the rare message of 128 bytes or more moves its bytes up by the
/// length's extra bytes once. Fields come in the order `traverse` gives them, as SwiftProtobuf's
/// do, and maps in their dictionary's order (SwiftProtobuf's default, without deterministic
/// ordering), so for the same message value the bytes are the same.
public struct ProtoWriter: SwiftProtobuf.Visitor {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// `message` encoded.
    public static func encode(_ message: some SwiftProtobuf.Message, capacity: Int = 256) throws -> [UInt8] {
        var writer = ProtoWriter(capacity: capacity)
        try message.traverse(visitor: &writer)
        return writer.bytes
    }

    // MARK: Wire primitives

    enum WireType: UInt64 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, startGroup = 3, endGroup = 4, fixed32 = 5
    }

    @inline(__always)
    mutating func putVarint(_ value: UInt64) {
        WireVarint.append(value, to: &bytes)
    }

    @inline(__always)
    mutating func putTag(_ fieldNumber: Int, _ wireType: WireType) {
        putVarint(UInt64(fieldNumber) << 3 | wireType.rawValue)
    }

    @inline(__always)
    mutating func putFixed32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always)
    mutating func putFixed64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always)
    static func zigZag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    /// Writes what `body` writes behind its length as a varint: a one-byte length first, widened
    /// afterwards if the content came to 128 bytes or more.
    @inline(__always)
    mutating func putLengthDelimited(_ body: (inout ProtoWriter) throws -> Void) rethrows {
        let mark = bytes.count
        bytes.append(0)
        try body(&self)
        let length = bytes.count - mark - 1
        if length < 0x80 {
            bytes[mark] = UInt8(length)
        } else {
            var prefix: [UInt8] = []
            WireVarint.append(UInt64(length), to: &prefix)
            bytes.replaceSubrange(mark..<(mark + 1), with: prefix)
        }
    }

    mutating func putBytes(_ data: some Collection<UInt8>) {
        putVarint(UInt64(data.count))
        bytes.append(contentsOf: data)
    }

    // MARK: Singular fields

    public mutating func visitUnknown(bytes data: Data) throws {
        bytes.append(contentsOf: data)
    }

    public mutating func visitSingularFloatField(value: Float, fieldNumber: Int) throws {
        putTag(fieldNumber, .fixed32)
        putFixed32(value.bitPattern)
    }

    public mutating func visitSingularDoubleField(value: Double, fieldNumber: Int) throws {
        putTag(fieldNumber, .fixed64)
        putFixed64(value.bitPattern)
    }

    public mutating func visitSingularInt32Field(value: Int32, fieldNumber: Int) throws {
        putTag(fieldNumber, .varint)
        putVarint(UInt64(bitPattern: Int64(value)))
    }

    public mutating func visitSingularInt64Field(value: Int64, fieldNumber: Int) throws {
        putTag(fieldNumber, .varint)
        putVarint(UInt64(bitPattern: value))
    }

    public mutating func visitSingularUInt32Field(value: UInt32, fieldNumber: Int) throws {
        putTag(fieldNumber, .varint)
        putVarint(UInt64(value))
    }

    public mutating func visitSingularUInt64Field(value: UInt64, fieldNumber: Int) throws {
        putTag(fieldNumber, .varint)
        putVarint(value)
    }

    public mutating func visitSingularSInt32Field(value: Int32, fieldNumber: Int) throws {
        putTag(fieldNumber, .varint)
        putVarint(Self.zigZag(Int64(value)))
    }

    public mutating func visitSingularSInt64Field(value: Int64, fieldNumber: Int) throws {
        putTag(fieldNumber, .varint)
        putVarint(Self.zigZag(value))
    }

    public mutating func visitSingularFixed32Field(value: UInt32, fieldNumber: Int) throws {
        putTag(fieldNumber, .fixed32)
        putFixed32(value)
    }

    public mutating func visitSingularFixed64Field(value: UInt64, fieldNumber: Int) throws {
        putTag(fieldNumber, .fixed64)
        putFixed64(value)
    }

    public mutating func visitSingularSFixed32Field(value: Int32, fieldNumber: Int) throws {
        putTag(fieldNumber, .fixed32)
        putFixed32(UInt32(bitPattern: value))
    }

    public mutating func visitSingularSFixed64Field(value: Int64, fieldNumber: Int) throws {
        putTag(fieldNumber, .fixed64)
        putFixed64(UInt64(bitPattern: value))
    }

    public mutating func visitSingularBoolField(value: Bool, fieldNumber: Int) throws {
        putTag(fieldNumber, .varint)
        bytes.append(value ? 1 : 0)
    }

    public mutating func visitSingularStringField(value: String, fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        var value = value
        value.withUTF8 { putBytes($0) }
    }

    public mutating func visitSingularBytesField(value: Data, fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putBytes(value)
    }

    public mutating func visitSingularEnumField<E: SwiftProtobuf.Enum>(value: E, fieldNumber: Int) throws {
        putTag(fieldNumber, .varint)
        putVarint(UInt64(bitPattern: Int64(value.rawValue)))
    }

    public mutating func visitSingularMessageField<M: SwiftProtobuf.Message>(value: M, fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        try putLengthDelimited { writer in try value.traverse(visitor: &writer) }
    }

    public mutating func visitSingularGroupField<G: SwiftProtobuf.Message>(value: G, fieldNumber: Int) throws {
        putTag(fieldNumber, .startGroup)
        try value.traverse(visitor: &self)
        putTag(fieldNumber, .endGroup)
    }

    // MARK: Packed fields (repeated ones use the protocol's defaults: each value as a singular field)

    public mutating func visitPackedFloatField(value: [Float], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putVarint(UInt64(value.count * 4))
        for item in value { putFixed32(item.bitPattern) }
    }

    public mutating func visitPackedDoubleField(value: [Double], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putVarint(UInt64(value.count * 8))
        for item in value { putFixed64(item.bitPattern) }
    }

    public mutating func visitPackedInt32Field(value: [Int32], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putLengthDelimited { writer in for item in value { writer.putVarint(UInt64(bitPattern: Int64(item))) } }
    }

    public mutating func visitPackedInt64Field(value: [Int64], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putLengthDelimited { writer in for item in value { writer.putVarint(UInt64(bitPattern: item)) } }
    }

    public mutating func visitPackedSInt32Field(value: [Int32], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putLengthDelimited { writer in for item in value { writer.putVarint(Self.zigZag(Int64(item))) } }
    }

    public mutating func visitPackedSInt64Field(value: [Int64], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putLengthDelimited { writer in for item in value { writer.putVarint(Self.zigZag(item)) } }
    }

    public mutating func visitPackedUInt32Field(value: [UInt32], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putLengthDelimited { writer in for item in value { writer.putVarint(UInt64(item)) } }
    }

    public mutating func visitPackedUInt64Field(value: [UInt64], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putLengthDelimited { writer in for item in value { writer.putVarint(item) } }
    }

    public mutating func visitPackedFixed32Field(value: [UInt32], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putVarint(UInt64(value.count * 4))
        for item in value { putFixed32(item) }
    }

    public mutating func visitPackedFixed64Field(value: [UInt64], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putVarint(UInt64(value.count * 8))
        for item in value { putFixed64(item) }
    }

    public mutating func visitPackedSFixed32Field(value: [Int32], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putVarint(UInt64(value.count * 4))
        for item in value { putFixed32(UInt32(bitPattern: item)) }
    }

    public mutating func visitPackedSFixed64Field(value: [Int64], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putVarint(UInt64(value.count * 8))
        for item in value { putFixed64(UInt64(bitPattern: item)) }
    }

    public mutating func visitPackedBoolField(value: [Bool], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putVarint(UInt64(value.count))
        for item in value { bytes.append(item ? 1 : 0) }
    }

    public mutating func visitPackedEnumField<E: SwiftProtobuf.Enum>(value: [E], fieldNumber: Int) throws {
        putTag(fieldNumber, .lengthDelimited)
        putLengthDelimited { writer in for item in value { writer.putVarint(UInt64(bitPattern: Int64(item.rawValue))) } }
    }

    // MARK: Maps: each entry a nested message of its key (field 1) and value (field 2)

    /// Each entry of `map`, in the dictionary's order, as a length-delimited field `fieldNumber`.
    mutating func putMapEntries<Key, Value>(
        _ map: [Key: Value], fieldNumber: Int, _ entry: (inout ProtoWriter, Key, Value) throws -> Void
    ) throws {
        for (key, value) in map {
            putTag(fieldNumber, .lengthDelimited)
            try putLengthDelimited { writer in try entry(&writer, key, value) }
        }
    }

    public mutating func visitMapField<KeyType, ValueType: MapValueType>(
        fieldType: _ProtobufMap<KeyType, ValueType>.Type, value: _ProtobufMap<KeyType, ValueType>.BaseType, fieldNumber: Int
    ) throws {
        try putMapEntries(value, fieldNumber: fieldNumber) { writer, key, item in
            try KeyType.visitSingular(value: key, fieldNumber: 1, with: &writer)
            try ValueType.visitSingular(value: item, fieldNumber: 2, with: &writer)
        }
    }

    public mutating func visitMapField<KeyType, ValueType>(
        fieldType: _ProtobufEnumMap<KeyType, ValueType>.Type, value: _ProtobufEnumMap<KeyType, ValueType>.BaseType, fieldNumber: Int
    ) throws where ValueType.RawValue == Int {
        try putMapEntries(value, fieldNumber: fieldNumber) { writer, key, item in
            try KeyType.visitSingular(value: key, fieldNumber: 1, with: &writer)
            try writer.visitSingularEnumField(value: item, fieldNumber: 2)
        }
    }

    public mutating func visitMapField<KeyType, ValueType>(
        fieldType: _ProtobufMessageMap<KeyType, ValueType>.Type, value: _ProtobufMessageMap<KeyType, ValueType>.BaseType, fieldNumber: Int
    ) throws {
        try putMapEntries(value, fieldNumber: fieldNumber) { writer, key, item in
            try KeyType.visitSingular(value: key, fieldNumber: 1, with: &writer)
            try writer.visitSingularMessageField(value: item, fieldNumber: 2)
        }
    }

    // MARK: Extensions (none in Flowbus's schemas; written as SwiftProtobuf writes them)

    public mutating func visitExtensionFields(fields: ExtensionFieldValueSet, start: Int, end: Int) throws {
        try fields.traverse(visitor: &self, start: start, end: end)
    }

    public mutating func visitExtensionFieldsAsMessageSet(fields: ExtensionFieldValueSet, start: Int, end: Int) throws {
        throw ProtoWriterError.messageSetExtensions
    }
}

extension SwiftProtobuf.Message {
    /// The message's binary encoding through `ProtoWriter`: `serializedData()`'s bytes in one pass.
    public func wireData() throws -> Data {
        Data(try ProtoWriter.encode(self))
    }
}

/// What `ProtoWriter` does not write.
public enum ProtoWriterError: Error, CustomStringConvertible {
    case messageSetExtensions

    public var description: String {
        "ProtoWriter does not write MessageSet extensions; encode this message with serializedBytes() instead"
    }
}
