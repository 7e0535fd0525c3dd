import Foundation

/// One ZeroMQ message read from a `.frames` golden vector (format: Protocols/vectors/README.md).
public struct FrameVector: Sendable, Hashable {
    /// The file name without `.frames`, e.g. `mdp-client-request`.
    public var name: String
    /// The message's frames in order; an empty frame is `[]`.
    public var frames: [[UInt8]]
    /// The `#` comment lines, without the `#` and one following space.
    public var comments: [String]

    public init(name: String, frames: [[UInt8]], comments: [String] = []) {
        self.name = name
        self.frames = frames
        self.comments = comments
    }
}

/// Why a `.frames` file could not be read.
public enum FrameVectorError: Error, Sendable, Hashable, CustomStringConvertible {
    case oddHexLength(file: String, line: Int)
    case invalidHexCharacter(file: String, line: Int, character: Character)
    case noFrames(file: String)
    case unreadable(file: String, reason: String)

    public var description: String {
        switch self {
        case .oddHexLength(let file, let line):
            "\(file):\(line): the frame has an odd number of hex digits; write two lowercase hex digits per byte."
        case .invalidHexCharacter(let file, let line, let character):
            "\(file):\(line): \(character.debugDescription) is not a lowercase hex digit; write frames as [0-9a-f]+, an empty frame as '-'."
        case .noFrames(let file):
            "\(file): the vector holds no frame; write one frame per line (see Protocols/vectors/README.md)."
        case .unreadable(let file, let reason):
            "\(file): could not be read (\(reason)); check the path and permissions."
        }
    }
}

/// Reads and writes the `.frames` golden-vector format.
public enum FrameVectors {
    public static let fileExtension = "frames"

    /// Parses the text of one `.frames` file; `file` only names it in errors.
    public static func parse(_ text: String, file: String = "<text>") throws(FrameVectorError) -> (frames: [[UInt8]], comments: [String]) {
        var frames: [[UInt8]] = []
        var comments: [String] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                var comment = line.dropFirst()
                if comment.first == " " { comment = comment.dropFirst() }
                comments.append(String(comment))
                continue
            }
            if line == "-" {
                frames.append([])
                continue
            }
            frames.append(try decodeHex(line, file: file, line: index + 1))
        }
        guard !frames.isEmpty else { throw .noFrames(file: file) }
        return (frames, comments)
    }

    /// Reads one `.frames` file.
    public static func load(_ url: URL) throws(FrameVectorError) -> FrameVector {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw .unreadable(file: url.path, reason: "\(error)")
        }
        let parsed = try parse(text, file: url.lastPathComponent)
        return FrameVector(name: url.deletingPathExtension().lastPathComponent, frames: parsed.frames, comments: parsed.comments)
    }

    /// Reads every `.frames` file directly in `directory`, sorted by name.
    public static func loadAll(in directory: URL) throws(FrameVectorError) -> [FrameVector] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw .unreadable(file: directory.path, reason: "\(error)")
        }
        var vectors: [FrameVector] = []
        for name in names.sorted() where name.hasSuffix("." + fileExtension) {
            vectors.append(try load(directory.appendingPathComponent(name)))
        }
        return vectors
    }

    /// `Protocols/vectors` of the repository holding `filePath` (pass `#filePath` from a test).
    public static func directory(nearFile filePath: String) -> URL? {
        var url = URL(fileURLWithPath: filePath).deletingLastPathComponent()
        while url.path != "/" {
            let candidate = url.appendingPathComponent("Protocols/vectors")
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("README.md").path) { return candidate }
            url = url.deletingLastPathComponent()
        }
        return nil
    }

    /// Writes frames in the `.frames` format, comments first; `parse(render(f, c))` gives back `f` and `c`.
    public static func render(_ frames: [[UInt8]], comments: [String] = []) -> String {
        var lines = comments.map { "# " + $0 }
        for frame in frames {
            lines.append(frame.isEmpty ? "-" : hex(frame))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Lowercase hex, two digits per byte.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes lowercase hex; `file` and `line` only locate errors.
    public static func decodeHex(_ text: some StringProtocol, file: String = "<text>", line: Int = 1) throws(FrameVectorError) -> [UInt8] {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { throw .oddHexLength(file: file, line: line) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]) else { throw .invalidHexCharacter(file: file, line: line, character: Character(UnicodeScalar(utf8[index]))) }
            guard let low = nibble(utf8[index + 1]) else { throw .invalidHexCharacter(file: file, line: line, character: Character(UnicodeScalar(utf8[index + 1]))) }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
