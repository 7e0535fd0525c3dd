/// Protobuf's base-128 varint, least significant group first: what the envelopes' fields, the
/// history's packed events and the Clone map's deltas are written with.
public enum WireVarint {
    // Inlinable: the protobuf writer and the deltas call these once a field, in other modules.
    @inlinable @inline(__always)
    public static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// The varint at `offset` in `bytes`, and `offset` moved past it; nil when the bytes end
    /// before it does, or it runs past 64 bits.
    @inlinable @inline(__always)
    public static func read(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}
