import MessagePath
import Logging
import Foundation
import Glibc

/// The server's map on disk, so a restarted host starts from what the last one held: an
/// append-only file of the changes it applied (sets and deletes, in sequence order), read back
/// at start and rewritten with only the live entries once it has grown to several times their
/// size. Each change is one `write(2)`: it survives a kill -9 of the host at once (the kernel
/// holds it); a power loss may lose the last ones. A torn last record is cut off when read.
///
/// Record: kind (1 set, 2 delete, 3 a sequence spent on a change not kept, e.g. a write with a
/// ttl), sequence (8 bytes), then key, uuid, properties and value, each a 4-byte length and its
/// bytes; all big-endian. A restarted server never reuses a sequence a subscriber may have seen.
final class CloneJournal {
    struct Entry: Equatable {
        var key: [UInt8]
        var sequence: UInt64
        var uuid: [UInt8]
        var properties: [UInt8]
        var value: [UInt8]
    }

    let path: String
    private var descriptor: Int32
    /// Bytes in the file now.
    private(set) var size: Int

    /// Opens (creating) the file at `path` for appending.
    init(path: String) throws(CloneStartError) {
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .system("cannot open the clone journal \(path): \(String(cString: strerror(errno))); check that the directory exists and is this user's to write")
        }
        var info = stat()
        fstat(descriptor, &info)
        size = Int(info.st_size)
    }

    deinit { close(descriptor) }

    /// The live entries the file holds (the last set of each key not deleted since), and the
    /// highest sequence in it. A torn last record (the host died mid-write) is cut off.
    func load() throws(CloneStartError) -> (entries: [Entry], sequence: UInt64) {
        guard let data = FileManager.default.contents(atPath: path) else { return ([], 0) }
        let bytes = [UInt8](data)
        let (entries, sequence, offset) = Self.decode(bytes)
        if offset < bytes.count {
            // A torn tail: keep what is whole.
            if ftruncate(descriptor, off_t(offset)) != 0 {
                throw .system("cannot cut the torn end off the clone journal \(path): \(String(cString: strerror(errno)))")
            }
            size = offset
        }
        return (entries, sequence)
    }

    /// Reads a journal's bytes: the live entries (the last set of each key not deleted since) in
    /// sequence order, the highest sequence, and how many leading bytes hold whole records.
    static func decode(_ bytes: [UInt8]) -> (entries: [Entry], sequence: UInt64, whole: Int) {
        var live: [[UInt8]: Entry] = [:]
        var sequence: UInt64 = 0
        var reader = Reader(bytes: bytes)
        while let record = reader.next() {
            sequence = max(sequence, record.entry.sequence)
            switch record.kind {
            // An empty value is a delete in Clone; a set record holding one (a server writes
            // none; a damaged file might) is read as the delete it means, never as a live key.
            case 1 where !record.entry.value.isEmpty: live[record.entry.key] = record.entry
            case 1, 2: live[record.entry.key] = nil
            default: break
            }
        }
        return (live.values.sorted { $0.sequence < $1.sequence }, sequence, reader.offset)
    }

    /// Appends a set (`value` not empty) or a delete.
    func append(key: [UInt8], sequence: UInt64, uuid: [UInt8], properties: [UInt8], value: [UInt8]) -> Bool {
        var record: [UInt8] = []
        record.reserveCapacity(1 + 8 + 16 + key.count + uuid.count + properties.count + value.count)
        Self.encode(&record, key: key, sequence: sequence, uuid: uuid, properties: properties, value: value)
        return write(record)
    }

    /// Notes that `sequence` was used by a change the journal does not keep.
    func appendSequence(_ sequence: UInt64) -> Bool {
        var record: [UInt8] = []
        Self.encode(&record, kind: 3, key: [], sequence: sequence, uuid: [], properties: [], value: [])
        return write(record)
    }

    /// Replaces the file with `entries` only, and the sequence reached (written aside, then
    /// renamed over it).
    func compact(_ entries: [Entry], sequence: UInt64) -> Bool {
        let temporary = path + ".compacting"
        let fresh = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fresh >= 0 else { return false }
        var buffer: [UInt8] = []
        var ok = true
        for entry in entries.sorted(by: { $0.sequence < $1.sequence }) {
            Self.encode(&buffer, key: entry.key, sequence: entry.sequence, uuid: entry.uuid, properties: entry.properties, value: entry.value)
            if buffer.count > 1 << 20 {
                ok = ok && Self.writeAll(fresh, buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        Self.encode(&buffer, kind: 3, key: [], sequence: sequence, uuid: [], properties: [], value: [])
        ok = ok && Self.writeAll(fresh, buffer) && fsync(fresh) == 0
        close(fresh)
        guard ok, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        close(descriptor)
        descriptor = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        var info = stat()
        fstat(descriptor, &info)
        size = Int(info.st_size)
        return descriptor >= 0
    }

    private func write(_ record: [UInt8]) -> Bool {
        guard Self.writeAll(descriptor, record) else { return false }
        size += record.count
        return true
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, bytes.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                return false
            }
            written += result
        }
        return true
    }

    static func encode(
        _ buffer: inout [UInt8], kind: UInt8? = nil, key: [UInt8], sequence: UInt64, uuid: [UInt8], properties: [UInt8], value: [UInt8]
    ) {
        buffer.append(kind ?? (value.isEmpty ? 2 : 1))
        withUnsafeBytes(of: sequence.bigEndian) { buffer.append(contentsOf: $0) }
        for part in [key, uuid, properties, value] {
            withUnsafeBytes(of: UInt32(part.count).bigEndian) { buffer.append(contentsOf: $0) }
            buffer.append(contentsOf: part)
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func next() -> (entry: Entry, kind: UInt8)? {
            var cursor = offset
            guard cursor + 9 <= bytes.count, (1...3).contains(bytes[cursor]) else { return nil }
            let kind = bytes[cursor]
            var sequence: UInt64 = 0
            for index in 1...8 { sequence = sequence << 8 | UInt64(bytes[cursor + index]) }
            cursor += 9
            var parts: [[UInt8]] = []
            for _ in 0..<4 {
                guard cursor + 4 <= bytes.count else { return nil }
                var length = 0
                for index in 0..<4 { length = length << 8 | Int(bytes[cursor + index]) }
                cursor += 4
                guard length <= bytes.count - cursor else { return nil }
                parts.append(Array(bytes[cursor..<(cursor + length)]))
                cursor += length
            }
            offset = cursor
            return (Entry(key: parts[0], sequence: sequence, uuid: parts[1], properties: parts[2], value: parts[3]), kind)
        }
    }
}

extension CloneServerLoop {
    /// Loads the journal's entries into the map: keys, index, byte counts, the session chain and
    /// the sequence carry on from where the last server stopped.
    func restoreFromJournal() throws(CloneStartError) {
        guard let journal else { return }
        let (entries, last) = try journal.load()
        for entry in entries {
            let key = KeyBytes(entry.key)
            packedValues.store(
                Stored(value: entry.value, sequence: entry.sequence, properties: entry.properties), under: key, in: &store,
                after: configuration.packValuesAfter, smallest: deltas.limits.smallestValue)
            index.insert(key)
            storeBytes += entry.key.count + entry.value.count
            if let length = entry.key.withUnsafeBytes({ CloneKeyRules.sessionPrefixLength($0) }) {
                let session = KeyBytes(Array(entry.key[0..<length]))
                sessionBytes[session, default: 0] += entry.key.count + entry.value.count
                sessions[session] = max(sessions[session] ?? 0, entry.sequence)
            }
        }
        sequence = last
        statistics.journalRestored = entries.count
        if !entries.isEmpty || last > 0 {
            logger.notice("clone map restored from its journal", metadata: [
                "flowbus.service": "clone", "flowbus.journal": "\(journal.path)", "flowbus.keys": "\(entries.count)",
                "flowbus.sequence": "\(last)",
            ])
        }
    }

    /// Appends one applied change to the journal; rewrites the file when it has grown to four
    /// times the live data (and past `journalCompactionBytes`).
    func journal(_ update: AcceptedSet) {
        guard let journal else { return }
        let written = update.ttl == nil || update.value.isEmpty
            ? journal.append(key: update.key, sequence: sequence, uuid: update.uuid?.bytes ?? [], properties: update.properties, value: update.value)
            : journal.appendSequence(sequence)
        if !written {
            journalFailed("a change could not be written to the clone journal")
            return
        }
        statistics.journalAppends += 1
        if journal.size > max(configuration.journalCompactionBytes, storeBytes * 4) {
            let entries = store.map { key, stored in
                CloneJournal.Entry(key: key.bytes, sequence: stored.sequence, uuid: [], properties: stored.properties, value: value(of: stored, key: key.bytes))
            }
            if journal.compact(entries, sequence: sequence) {
                statistics.journalCompactions += 1
            } else {
                journalFailed("the clone journal could not be compacted")
            }
        }
    }

    private func journalFailed(_ what: String) {
        journalFailures += 1
        statistics.journalFailures = journalFailures
        if logLimiter.shouldLog(peer: Array("journal".utf8), kind: what) {
            logger.error("\(what): \(String(cString: strerror(errno))); the map goes on in memory, but a restart would lose what was not written", metadata: [
                "flowbus.service": "clone", "flowbus.failures": "\(journalFailures)",
                "flowbus.hint": "check the disk space and the run directory's permissions",
            ])
        }
    }
}
