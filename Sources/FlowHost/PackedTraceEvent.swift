import FlowProtocol
import Foundation
import WireCheck

/// A `TraceEvent` as the host's history keeps it: one byte array holding only the fields the
/// event has, its session left out (the log it sits in says it), and the words that repeat from
/// event to event — who, which service, which action, the key under the session — as numbers
/// into a `TraceWords` table. A `TraceEvent` is some 350 bytes before its strings; packed, a
/// typical one is under a hundred (SessionHistoryTests measures both).
struct PackedTraceEvent {
    let bytes: [UInt8]

    /// An event packed before, read back from a session's log.
    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The fields after the kind and the time, each a tag byte then its value. A tag with
    /// `Tag.spelledOut` set carries a word spelled out (the table was full) instead of its number.
    enum Tag: UInt8, CaseIterable {
        case sequence = 1, from, to, service, worker, key, otherKey, action, screen, version
        case idempotencyKey, incarnation, askedBy, applied, error, phase, message, top, stack
        case tab, modal, user, flow, open
        /// An idempotency key that ends in a UUID: its start as a word, the UUID as 16 bytes.
        case keyWithUUID
        /// An idempotency key with the session's id in it: the words before and after the id.
        case keyWithSession

        static let spelledOut: UInt8 = 0x80
    }

    init(_ event: TraceEvent, words: inout TraceWords) {
        // The table moves into the writer and back (swapped, not copied: a copy of its dictionary
        // per event would cost as much as the table).
        var writer = Writer()
        swap(&writer.words, &words)
        defer { swap(&writer.words, &words) }
        writer.bytes.append(UInt8(TraceEvent.Kind.allCases.firstIndex(of: event.kind)!))
        writer.fixed(event.atUnixNanos)
        writer.number(.sequence, event.sequence)
        writer.word(.from, event.from)
        writer.word(.to, event.to)
        writer.word(.service, event.service)
        writer.word(.worker, event.worker)
        if let key = event.key {
            // Keys under the session's own prefix repeat from session to session once it is off.
            let prefix = "/s/\(event.session)/"
            if key.hasPrefix(prefix) {
                writer.word(.key, String(key.dropFirst(prefix.count)))
            } else {
                writer.text(.otherKey, key)
            }
        }
        writer.word(.action, event.action)
        writer.word(.screen, event.screen)
        writer.number(.version, event.version)
        writer.idempotencyKey(event.idempotencyKey, session: event.session)
        writer.number(.incarnation, event.incarnation)
        writer.number(.askedBy, event.askedBy)
        writer.flag(.applied, event.applied)
        writer.text(.error, event.error)
        writer.word(.phase, event.phase)
        writer.text(.message, event.message)
        writer.word(.top, event.top)
        if let stack = event.stack {
            writer.bytes.append(Tag.stack.rawValue)
            writer.varint(UInt64(stack.count))
            for screen in stack { writer.wordValue(screen) }
        }
        writer.word(.tab, event.tab)
        writer.word(.modal, event.modal)
        writer.text(.user, event.user)
        writer.word(.flow, event.flow)
        writer.flag(.open, event.open)
        // Exactly as long as it is: the writer's array grew by doubling.
        bytes = writer.bytes.withUnsafeBufferPointer { Array($0) }
    }

    /// The event again, in `session`.
    func event(session: String, words: TraceWords) -> TraceEvent {
        var reader = Reader(bytes: bytes, words: words)
        let kind = TraceEvent.Kind.allCases[Int(reader.byte())]
        var event = TraceEvent(kind: kind, session: session, atUnixNanos: reader.fixed(), from: "")
        while !reader.atEnd {
            let raw = reader.byte()
            let spelled = raw & Tag.spelledOut != 0
            guard let tag = Tag(rawValue: raw & ~Tag.spelledOut) else { break }
            switch tag {
            case .sequence: event.sequence = reader.varint()
            case .from: event.from = reader.word(spelled)
            case .to: event.to = reader.word(spelled)
            case .service: event.service = reader.word(spelled)
            case .worker: event.worker = reader.word(spelled)
            case .key: event.key = "/s/\(session)/" + reader.word(spelled)
            case .otherKey: event.key = reader.text()
            case .action: event.action = reader.word(spelled)
            case .screen: event.screen = reader.word(spelled)
            case .version: event.version = reader.varint()
            case .idempotencyKey: event.idempotencyKey = reader.text()
            case .keyWithUUID:
                let start = reader.listedWord()
                event.idempotencyKey = start + reader.uuid()
            case .keyWithSession:
                let before = reader.listedWord()
                event.idempotencyKey = before + session + reader.listedWord()
            case .incarnation: event.incarnation = reader.varint()
            case .askedBy: event.askedBy = reader.varint()
            case .applied: event.applied = reader.byte() != 0
            case .error: event.error = reader.text()
            case .phase: event.phase = reader.word(spelled)
            case .message: event.message = reader.text()
            case .top: event.top = reader.word(spelled)
            case .stack:
                let count = Int(reader.varint())
                event.stack = (0..<count).map { _ in
                    let spelled = reader.byte() != 0
                    return reader.word(spelled)
                }
            case .tab: event.tab = reader.word(spelled)
            case .modal: event.modal = reader.word(spelled)
            case .user: event.user = reader.text()
            case .flow: event.flow = reader.word(spelled)
            case .open: event.open = reader.byte() != 0
            }
        }
        return event
    }

    /// Read without unpacking the rest: what `SessionLog` and `lastWorker` look at.
    var kind: TraceEvent.Kind { TraceEvent.Kind.allCases[Int(bytes[0])] }

    var atUnixNanos: Int64 {
        var reader = Reader(bytes: bytes, words: TraceWords())
        _ = reader.byte()
        return reader.fixed()
    }

    private struct Writer {
        var words = TraceWords()
        var bytes: [UInt8] = []

        mutating func varint(_ value: UInt64) {
            WireVarint.append(value, to: &bytes)
        }

        mutating func fixed(_ value: Int64) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func number(_ tag: Tag, _ value: UInt64?) {
            guard let value else { return }
            bytes.append(tag.rawValue)
            varint(value)
        }

        mutating func flag(_ tag: Tag, _ value: Bool?) {
            guard let value else { return }
            bytes.append(tag.rawValue)
            bytes.append(value ? 1 : 0)
        }

        mutating func text(_ tag: Tag, _ value: String?) {
            guard let value else { return }
            bytes.append(tag.rawValue)
            spell(value)
        }

        mutating func spell(_ value: String) {
            varint(UInt64(value.utf8.count))
            bytes.append(contentsOf: value.utf8)
        }

        mutating func word(_ tag: Tag, _ value: String?) {
            guard let value else { return }
            if let number = words.number(for: value) {
                bytes.append(tag.rawValue)
                varint(UInt64(number))
            } else {
                bytes.append(tag.rawValue | Tag.spelledOut)
                spell(value)
            }
        }

        /// An idempotency key, most of which are a UUID (a client's), a writer's prefix and a UUID
        /// (`coord-app/0/1/<UUID>`), or a word around the session's id (`appear/<id>/<screen>/1`):
        /// some 40 bytes spelled out, under 20 packed. Other keys are spelled out.
        mutating func idempotencyKey(_ key: String?, session: String) {
            guard let key else { return }
            let utf8 = key.utf8
            if utf8.count >= 36, utf8.count <= 36 + 48 {
                let suffix = String(decoding: utf8.suffix(36), as: UTF8.self)
                if let uuid = UUID(uuidString: suffix), uuid.uuidString == suffix {
                    bytes.append(Tag.keyWithUUID.rawValue)
                    wordValue(String(decoding: utf8.dropLast(36), as: UTF8.self))
                    withUnsafeBytes(of: uuid.uuid) { bytes.append(contentsOf: $0) }
                    return
                }
            }
            if !session.isEmpty, let range = key.range(of: session) {
                let before = String(key[..<range.lowerBound])
                let after = String(key[range.upperBound...])
                // Only short words around it: the table is for words that repeat.
                if before.utf8.count <= 24, after.utf8.count <= 24 {
                    bytes.append(Tag.keyWithSession.rawValue)
                    wordValue(before)
                    wordValue(after)
                    return
                }
            }
            text(.idempotencyKey, key)
        }

        /// A word inside a list: a byte says whether it is spelled out.
        mutating func wordValue(_ value: String) {
            if let number = words.number(for: value) {
                bytes.append(0)
                varint(UInt64(number))
            } else {
                bytes.append(1)
                spell(value)
            }
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        let words: TraceWords
        var offset = 0

        var atEnd: Bool { offset >= bytes.count }

        mutating func byte() -> UInt8 {
            guard offset < bytes.count else { return 0 }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func varint() -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while shift < 64 {
                let byte = byte()
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { break }
                shift += 7
            }
            return value
        }

        mutating func fixed() -> Int64 {
            var value: UInt64 = 0
            for index in 0..<8 { value |= UInt64(byte()) << (8 * UInt64(index)) }
            return Int64(bitPattern: value)
        }

        mutating func text() -> String {
            let count = min(Int(varint()), bytes.count - offset)
            defer { offset += count }
            return String(decoding: bytes[offset..<(offset + count)], as: UTF8.self)
        }

        mutating func word(_ spelled: Bool) -> String {
            spelled ? text() : words.word(Int(varint()))
        }

        /// A word written by `wordValue`.
        mutating func listedWord() -> String {
            word(byte() != 0)
        }

        mutating func uuid() -> String {
            var raw = [UInt8](repeating: 0, count: 16)
            for index in 0..<16 { raw[index] = byte() }
            let uuid = raw.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
            return UUID(uuid: uuid).uuidString
        }
    }
}

/// The words trace events repeat (processes, services, actions, screens, key suffixes), each
/// kept once and named by its number. Bounded: past `capacity` distinct words, new ones are
/// spelled out in their events instead.
struct TraceWords {
    static let capacity = 65_536
    private var numbers: [String: Int] = [:]
    private var words: [String] = []

    var count: Int { words.count }

    /// The word's number, adding it while there is room; nil when the table is full.
    mutating func number(for word: String) -> Int? {
        if let number = numbers[word] { return number }
        guard words.count < Self.capacity else { return nil }
        numbers[word] = words.count
        words.append(word)
        return words.count - 1
    }

    func word(_ number: Int) -> String {
        number < words.count ? words[number] : ""
    }
}
