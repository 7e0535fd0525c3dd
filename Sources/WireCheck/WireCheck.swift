/// The check that ends every Flowbus envelope (Protocols/README.md §5): protobuf field 11 of
/// wire type 5 (fixed32), so tag byte 0x5D, then the CRC-32C of every byte before that tag,
/// little-endian. It is written after every other field, so a message cut short loses it, and
/// any byte changed on the way makes it disagree. A protobuf decoder that knows nothing of it
/// reads it as one more field.
///
/// Flowbus readers require it: a body or value without it, or whose check disagrees, was
/// damaged on the way and is treated as lost (answered `DAMAGED`, or not confirmed) and sent again.
public enum WireCheck {
    /// Protobuf key of field 11, wire type 5.
    public static let tag: UInt8 = 0x5D
    /// The tag and the four checksum bytes.
    public static let size = 5

    /// Appends the check for the bytes already in `message`.
    public static func seal(_ message: inout [UInt8]) {
        let sum = CRC32C.checksum(message)
        message.reserveCapacity(message.count + size)
        message.append(tag)
        message.append(UInt8(truncatingIfNeeded: sum))
        message.append(UInt8(truncatingIfNeeded: sum >> 8))
        message.append(UInt8(truncatingIfNeeded: sum >> 16))
        message.append(UInt8(truncatingIfNeeded: sum >> 24))
    }

    /// `message` with its check appended.
    public static func sealed(_ message: [UInt8]) -> [UInt8] {
        var message = message
        seal(&message)
        return message
    }

    /// What a message's last five bytes say about the ones before them.
    public enum Verdict: Sendable, Hashable, CustomStringConvertible {
        /// The check is there and agrees.
        case intact
        /// The message does not end with a check (cut short, or its writer wrote none).
        case missing
        /// The check is there and disagrees: a byte changed on the way.
        case mismatch(written: UInt32, computed: UInt32)

        public var description: String {
            switch self {
            case .intact: "intact"
            case .missing: "it does not end with its check (cut short on the way, or written without one)"
            case .mismatch(let written, let computed):
                "its check says \(hex(written)) but its bytes sum to \(hex(computed)) (changed on the way)"
            }
        }

        private func hex(_ value: UInt32) -> String {
            let digits = String(value, radix: 16)
            return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
        }
    }

    public static func verify(_ message: UnsafeRawBufferPointer) -> Verdict {
        let count = message.count
        guard count >= size, message[count - size] == tag else { return .missing }
        let written = UInt32(message[count - 4]) | UInt32(message[count - 3]) << 8
            | UInt32(message[count - 2]) << 16 | UInt32(message[count - 1]) << 24
        let computed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: message[0..<(count - size)]))
        return written == computed ? .intact : .mismatch(written: written, computed: computed)
    }

    public static func verify(_ message: [UInt8]) -> Verdict {
        message.withUnsafeBytes { verify($0) }
    }
}
