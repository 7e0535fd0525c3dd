/// The journal's codec, open to the fuzzers (`Fuzz/`, `import FlowbusFuzzing`): the file is read
/// back at every start, so whatever bytes it holds must be read without a crash, and what is
/// read must survive being written again.
@_spi(Fuzzing)
public enum CloneJournalCodec {
    /// Reads `bytes` as a journal, writes the live entries and the sequence reached as a fresh
    /// journal (as compaction does) and reads that again. Returns what differed, or nil when the
    /// two readings agree and the fresh file is whole.
    public static func roundTripProblem(_ bytes: [UInt8]) -> String? {
        let first = CloneJournal.decode(bytes)
        guard first.whole <= bytes.count else { return "claimed \(first.whole) whole bytes of \(bytes.count)" }
        var rewritten: [UInt8] = []
        for entry in first.entries {
            CloneJournal.encode(&rewritten, key: entry.key, sequence: entry.sequence, uuid: entry.uuid, properties: entry.properties, value: entry.value)
        }
        CloneJournal.encode(&rewritten, kind: 3, key: [], sequence: first.sequence, uuid: [], properties: [], value: [])
        let second = CloneJournal.decode(rewritten)
        guard second.whole == rewritten.count else { return "a rewritten journal of \(rewritten.count) bytes read as \(second.whole) whole" }
        guard second.sequence == first.sequence else { return "sequence \(first.sequence) read back as \(second.sequence)" }
        let before = Dictionary(first.entries.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        let after = Dictionary(second.entries.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        guard before.count == first.entries.count else { return "two live entries for one key" }
        guard before == after else { return "\(before.count) live entries read back as \(after.count), or changed" }
        return nil
    }
}

extension CloneJournalCodec {
    /// A small journal as a server writes it: sets, a delete, a spent sequence and a torn end.
    public static func sample() -> [UInt8] {
        var bytes: [UInt8] = []
        let nav = Array("/s/abc/nav".utf8)
        CloneJournal.encode(&bytes, key: nav, sequence: 1, uuid: [], properties: [], value: Array("screen=home".utf8))
        CloneJournal.encode(&bytes, key: Array("/s/abc/vm/form".utf8), sequence: 2, uuid: Array(repeating: 7, count: 16),
                            properties: Array("ttl=30\n".utf8), value: [1, 2, 3])
        CloneJournal.encode(&bytes, kind: 3, key: [], sequence: 3, uuid: [], properties: [], value: [])
        CloneJournal.encode(&bytes, key: nav, sequence: 4, uuid: [], properties: [], value: [])
        CloneJournal.encode(&bytes, key: nav, sequence: 5, uuid: [], properties: [], value: Array("screen=details".utf8))
        bytes += [1, 0, 0]
        return bytes
    }
}
