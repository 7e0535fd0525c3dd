@testable import Clone
import Foundation
import MessagePath
import Testing

/// Packed values' deltas kept end to end in chunks (issue 16: memory per session).
@Suite("Deltas kept in an arena")
struct DeltaArenaTests {
    struct Entry: PackableEntry {
        var held: HeldBytes
        var sequence: UInt64 = 1
        var queued = false
    }

    static func bytes(_ seed: Int, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7) }
    }

    @Test("deltas read back as they went in, a new chunk when one would run over, none past a slot's length")
    func appendAndRead() throws {
        var arena = DeltaArena()
        var slots: [(DeltaSlot, [UInt8])] = []
        // Enough to fill a chunk and start two more: none straddles two chunks.
        for index in 0..<1_200 {
            let delta = Self.bytes(index, count: 100 + index % 57)
            let slot = arena.append(delta)
            slots.append((try #require(slot), delta))
        }
        for (slot, delta) in slots { #expect(arena.bytes(of: slot) == delta) }
        #expect(Set(slots.map(\.0.chunk)) == [0, 1, 2])
        for (slot, _) in slots { #expect(slot.offset + Int(slot.count) <= DeltaArena.chunkBytes) }
        #expect(arena.usedBytes == slots.reduce(0) { $0 + $1.1.count })
        #expect(arena.liveBytes == arena.usedBytes)
        #expect(arena.append([]) == nil)
        #expect(arena.append([UInt8](repeating: 1, count: Int(UInt16.max) + 1)) == nil)
    }

    @Test("compacting keeps every entry's delta, shared ones shared, and frees the holes")
    func compaction() throws {
        var arena = DeltaArena()
        var store: [Int: Entry] = [:]
        var expected: [Int: [UInt8]] = [:]
        for index in 0..<4_000 {
            let delta = Self.bytes(index, count: 60 + index % 40)
            let appended = arena.append(delta)
            let slot = try #require(appended)
            store[index] = Entry(held: .packed(slot))
            expected[index] = delta
            // Every tenth delta is held by a second entry too.
            if index % 10 == 0 {
                arena.share(slot)
                store[100_000 + index] = Entry(held: .packed(slot))
                expected[100_000 + index] = delta
            }
        }
        store[-1] = Entry(held: .whole([1, 2, 3]))
        #expect(!arena.wantsCompaction)
        // Three quarters of the entries leave the map.
        for index in 0..<4_000 where index % 4 != 0 {
            if case .packed(let slot) = store.removeValue(forKey: index)?.held { arena.release(slot) }
            expected[index] = nil
        }
        #expect(arena.wantsCompaction, "\(arena.usedBytes) bytes used, \(arena.liveBytes) live")
        let before = arena.usedBytes
        arena.compact(&store)
        #expect(arena.usedBytes < before / 3)
        #expect(!arena.wantsCompaction)
        for (key, entry) in store {
            switch entry.held {
            case .whole(let bytes): #expect(key == -1 && bytes == [1, 2, 3])
            case .packed(let slot): #expect(arena.bytes(of: slot) == expected[key], "entry \(key)")
            }
        }
        // A delta two entries held is still one delta: both point at the same bytes.
        for index in stride(from: 0, to: 4_000, by: 20) {
            guard case .packed(let first) = store[index]?.held, case .packed(let second) = store[100_000 + index]?.held else {
                Issue.record("entry \(index) lost its delta")
                continue
            }
            #expect(first == second)
        }
        #expect(arena.liveBytes == expected.filter { $0.key != -1 }.reduce(0) { $0 + $1.value.count })
    }

    @Test("a map's packed values: stored, packed, replaced, deleted; counts and arena follow, values read whole")
    func packedValues() throws {
        var values = PackedValues<String>()
        var deltas = ValueDeltas()
        var store: [String: Entry] = [:]
        var written: [String: [UInt8]] = [:]
        func value(_ session: String, _ version: Int) -> [UInt8] {
            Array("state of \(session): phase success, version \(version), the rest the same in every session and version".utf8)
        }
        for index in 0..<3_000 {
            let key = String(format: "/v/x/s%07d", index)
            let bytes = value(String(format: "s%07d", index), 1)
            #expect(values.store(Entry(held: .whole(bytes), sequence: UInt64(index)), under: key, in: &store, after: .zero, smallest: 48) == nil)
            written[key] = bytes
        }
        values.packDue(in: &store, now: .now(), after: .zero, limit: 10_000) { value, key in deltas.pack(value, key: Array(key.utf8)) }
        // All but the first, which stays whole (the first of its shape).
        #expect(values.tally.values == 2_999)
        #expect(values.tally.valueBytes == written.values.reduce(0) { $0 + $1.count } - written["/v/x/s0000000"]!.count)
        #expect(values.tally.bytes == values.arena.liveBytes)
        #expect(values.tally.bytes * 4 < values.tally.valueBytes, "\(values.tally.valueBytes) bytes packed to \(values.tally.bytes)")
        for (key, bytes) in written {
            let entry = try #require(store[key])
            #expect(values.value(of: entry, key: Array(key.utf8), deltas: deltas) == bytes)
            #expect(values.valueCount(of: entry) == bytes.count)
        }
        // Two thirds written again (held whole, until they pack again) or deleted.
        for (index, key) in written.keys.sorted().enumerated() where index % 3 != 0 {
            if index % 3 == 1 {
                let bytes = value(String(key.dropFirst(5)), 2)
                #expect(values.store(Entry(held: .whole(bytes), sequence: 10_000), under: key, in: &store, after: nil, smallest: 48) == written[key]?.count)
                written[key] = bytes
            } else {
                #expect(values.removeValue(forKey: key, in: &store) == written[key]?.count)
                written[key] = nil
            }
        }
        #expect(values.tally.values == 999)
        #expect(values.tally.bytes == values.arena.liveBytes)
        #expect(values.arena.usedBytes <= 2 * values.arena.liveBytes || values.arena.usedBytes <= DeltaArena.compactAbove,
                "compacted as values left: \(values.arena.usedBytes) bytes used, \(values.arena.liveBytes) live")
        #expect(store.count == written.count)
        for (key, bytes) in written {
            #expect(values.value(of: try #require(store[key]), key: Array(key.utf8), deltas: deltas) == bytes, "\(key)")
        }
    }
}
