import Foundation
import WireCheck

/// The top-level fields of a serialized protobuf message, read without decoding the message: for
/// a reader that needs two or three scalars of a large message (the host's trace reads a view
/// state's phase, version and message, not its presentation).
public enum ProtoFields {
    /// One field's value as the wire carries it.
    public enum Value: Equatable, Sendable {
        case varint(UInt64)
        /// A length-delimited field: its bytes' range in the message.
        case lengthDelimited(Range<Int>)
        case fixed32(UInt32)
        case fixed64(UInt64)
    }

    /// Calls `visit` with each field's number and value, in wire order; false when the bytes are
    /// not a well-formed message (a field cut short, a length past the end, a group, a field
    /// number 0), in which case `visit` may have seen some of its fields.
    @discardableResult
    public static func scan(_ bytes: UnsafeRawBufferPointer, _ visit: (Int, Value) -> Void) -> Bool {
        var offset = 0
        func varint() -> UInt64? { WireVarint.read(bytes, at: &offset) }
        while offset < bytes.count {
            guard let tag = varint(), tag >> 3 > 0, tag >> 3 <= UInt64(Int32.max) else { return false }
            let number = Int(tag >> 3)
            switch tag & 7 {
            case 0:
                guard let value = varint() else { return false }
                visit(number, .varint(value))
            case 1:
                guard bytes.count - offset >= 8 else { return false }
                visit(number, .fixed64(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self).littleEndian))
                offset += 8
            case 2:
                guard let length = varint(), length <= UInt64(bytes.count - offset) else { return false }
                visit(number, .lengthDelimited(offset..<(offset + Int(length))))
                offset += Int(length)
            case 5:
                guard bytes.count - offset >= 4 else { return false }
                visit(number, .fixed32(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian))
                offset += 4
            default:
                return false
            }
        }
        return true
    }
}

extension Flowbus_V1_ViewState {
    /// The few fields a trace shows, read from a serialized view state without decoding its
    /// payload, presentation and actions: nil when the bytes are not a well-formed message, or
    /// one of these three fields has another wire type or invalid UTF-8.
    public struct Head: Equatable, Sendable {
        public var phase: Phase = .none
        public var screenVersion: UInt64 = 0
        public var message = ""

        public init(phase: Phase = .none, screenVersion: UInt64 = 0, message: String = "") {
            self.phase = phase
            self.screenVersion = screenVersion
            self.message = message
        }
    }

    public static func head(of bytes: Data) -> Head? {
        bytes.withUnsafeBytes { raw -> Head? in
            var head = Head()
            var good = true
            let wellFormed = ProtoFields.scan(raw) { number, value in
                switch (number, value) {
                case (1, .varint(let phase)): head.phase = Phase(rawValue: Int(Int32(truncatingIfNeeded: phase))) ?? .none
                case (5, .varint(let version)): head.screenVersion = version
                case (2, .lengthDelimited(let range)):
                    guard let text = String(validating: raw[range], as: UTF8.self) else { good = false; return }
                    head.message = text
                case (1, _), (2, _), (5, _): good = false
                default: break
                }
            }
            return wellFormed && good ? head : nil
        }
    }
}
