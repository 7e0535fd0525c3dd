/// How a fuzzer's flat input becomes the frames of one ZeroMQ message, and back: each frame is
/// a 2-byte big-endian length and that many bytes; a length past the end takes what is left.
/// Every input reads as some list of frames, so no input is wasted on a format error.
public enum FuzzFrames {
    public static func split(_ bytes: some Collection<UInt8>) -> [[UInt8]] {
        let bytes = Array(bytes)
        var frames: [[UInt8]] = []
        var cursor = 0
        while cursor < bytes.count {
            guard cursor + 2 <= bytes.count else {
                frames.append(Array(bytes[cursor...]))
                break
            }
            let length = Int(bytes[cursor]) << 8 | Int(bytes[cursor + 1])
            cursor += 2
            let end = min(bytes.count, cursor + length)
            frames.append(Array(bytes[cursor..<end]))
            cursor = end
        }
        return frames
    }

    /// The input that `split` reads as `frames` (each at most 65,535 bytes).
    public static func join(_ frames: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames {
            precondition(frame.count <= 0xFFFF, "a fuzz input frame holds at most 65,535 bytes")
            bytes.append(UInt8(frame.count >> 8))
            bytes.append(UInt8(frame.count & 0xFF))
            bytes.append(contentsOf: frame)
        }
        return bytes
    }
}
