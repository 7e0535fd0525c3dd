/// One `name=value` line of a KVPUB or KVSET properties frame.
public struct CloneProperty: Sendable, Hashable, Codable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// The properties frame of 12/CHP: zero or more `name=value\n` lines, kept in wire order.
public struct CloneProperties: Sendable, Hashable, Codable, RandomAccessCollection, ExpressibleByArrayLiteral {
    /// The time-to-live in seconds the server honours (12/CHP).
    public static let ttlName = "ttl"
    /// Flowbus's session chain: the global sequence of the previous KVPUB of the same session.
    public static let sessionPreviousName = "sprev"
    /// On a KVSET: confirm this write on the publisher under `ACK/<value>` (the writing agent's id).
    /// The server takes it off before storing and publishing the write.
    public static let ackName = "ack"
    /// On a KVSET: `<agent id>:<n>`, the writing agent's count of its writes. The server keeps
    /// it with the value and drops a later-arriving write of the same agent with a lower count
    /// (one that was delayed or reordered on the way), so an older value never replaces a newer
    /// one. Taken off before publishing.
    public static let writeSequenceName = "wseq"
    /// `wgen=<writer>:<generation>`: the process a write comes from and its incarnation. Once
    /// the server has applied a write of a newer generation of the same writer, it refuses the
    /// older ones': a replaced process's late write would put an outdated value back. Taken off
    /// before publishing.
    public static let writerGenerationName = "wgen"
    /// The publisher topic prefix of write confirmations. It does not start with `/`, so no
    /// subtree subscription receives them; an agent subscribed to everything ignores them.
    public static let ackTopicPrefix = "ACK/"
    /// Flowbus's closed mode: on a KTHXBAI at sequence 0, why the server sent no snapshot.
    public static let refusedName = "refused"

    public private(set) var items: [CloneProperty]

    public init(_ items: [CloneProperty] = []) {
        self.items = items
    }

    public init(arrayLiteral elements: CloneProperty...) {
        self.items = elements
    }

    public var startIndex: Int { items.startIndex }
    public var endIndex: Int { items.endIndex }
    public subscript(position: Int) -> CloneProperty { items[position] }

    /// The value of the first property called `name`.
    public subscript(name: String) -> String? {
        items.first { $0.name == name }?.value
    }

    /// Sets `name` (replacing every earlier line of that name) or removes it with nil.
    public mutating func set(_ name: String, _ value: String?) {
        items.removeAll { $0.name == name }
        if let value { items.append(CloneProperty(name: name, value: value)) }
    }

    /// The `ttl` property as a duration; nil when absent or not a positive number of seconds.
    public var ttl: Duration? {
        self[Self.ttlName].flatMap(Self.ttl)
    }

    /// A `ttl` value as a duration; nil when not a positive number of seconds.
    static func ttl(_ text: String) -> Duration? {
        guard let seconds = Double(text), seconds.isFinite, seconds > 0 else { return nil }
        return .nanoseconds(Int64(Swift.min(seconds, 1e9) * 1e9))
    }

    /// The `sprev` property: the sequence of the previous KVPUB of this key's session.
    public var sessionPrevious: UInt64? {
        self[Self.sessionPreviousName].flatMap { UInt64($0) }
    }

    /// The frame as sent: `name=value\n` per property.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        for item in items {
            bytes.append(contentsOf: item.name.utf8)
            bytes.append(UInt8(ascii: "="))
            bytes.append(contentsOf: item.value.utf8)
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// Parses a properties frame; every line must be `name=value` ended by a newline, the name
    /// non-empty printable ASCII without `=`, the value UTF-8 text.
    public init(decoding frame: [UInt8]) throws(CloneDecodeError) {
        var items: [CloneProperty] = []
        var lineStart = 0
        var index = 0
        while index < frame.count {
            if frame[index] == UInt8(ascii: "\n") {
                items.append(try Self.parseLine(frame[lineStart..<index]))
                lineStart = index + 1
            }
            index += 1
        }
        guard lineStart == frame.count else {
            throw .malformedProperties("the last property line does not end in a newline")
        }
        self.items = items
    }

    private static func parseLine(_ line: ArraySlice<UInt8>) throws(CloneDecodeError) -> CloneProperty {
        guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else {
            throw .malformedProperties("a property line has no '=': \(line.printableText)")
        }
        let name = line[line.startIndex..<equals]
        guard !name.isEmpty, name.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformedProperties("a property name must be printable ASCII without spaces: \(line.printableText)")
        }
        let value = line[(equals + 1)...]
        guard value.isValidUTF8 else {
            throw .malformedProperties("a property value is not UTF-8 text: \(line.printableText)")
        }
        return CloneProperty(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
    }
}

extension ArraySlice<UInt8> {
    /// A short printable rendering for error messages.
    var printableText: String {
        let shown = prefix(64).map { $0 >= 0x20 && $0 < 0x7F ? Character(UnicodeScalar($0)) : "?" }
        return "'" + String(shown) + (count > 64 ? "…'" : "'")
    }
}
