@testable import Clone
import Foundation
import Testing

@Suite("Byte strings the server keeps once, and the byte helpers of the hot path")
struct InternedBytesTests {
    static func address(_ bytes: [UInt8]) -> UnsafeRawPointer? {
        bytes.withUnsafeBytes { $0.baseAddress }
    }

    @Test("equal bytes come back as the array already held, so every copy shares one block")
    func shared() {
        var table = InternedBytes(capacity: 8)
        let first = table.interned(Array("0123456789abcdef".utf8))
        let second = table.interned(Array("0123456789abcdef".utf8))
        #expect(second == first)
        #expect(Self.address(second) == Self.address(first))
        let other = table.interned(Array("fedcba9876543210".utf8))
        #expect(Self.address(other) != Self.address(first))
        #expect(table.count == 2)
    }

    @Test("at its capacity the table starts again instead of growing")
    func bounded() {
        var table = InternedBytes(capacity: 4)
        for index in 0..<100 { _ = table.interned(Array("agent-\(index)".utf8)) }
        #expect(table.count <= 4)
        #expect(table.interned(Array("agent-99".utf8)) == Array("agent-99".utf8))
    }

    @Test("bytes read in place are interned as an array is: the held block, else a new array")
    func fromBuffers() {
        var table = InternedBytes(capacity: 8)
        let held = table.interned(Array("agent-a".utf8))
        let elsewhere = Array("xagent-a".utf8)
        // A run of writes from one agent, then another agent, then the first again (past the
        // last-handed-out shortcut, through the table).
        for _ in 0..<3 {
            let again = elsewhere.withUnsafeBytes { table.interned(UnsafeRawBufferPointer(rebasing: $0[1...])) }
            #expect(Self.address(again) == Self.address(held))
        }
        let other = Array("agent-b".utf8).withUnsafeBytes { table.interned($0) }
        #expect(other == Array("agent-b".utf8))
        #expect(Self.address(other) != Self.address(held))
        let back = Array("agent-a".utf8).withUnsafeBytes { table.interned($0) }
        #expect(Self.address(back) == Self.address(held))
        // Same length, one byte apart; and empty.
        let near = table.interned(Array("agent-c".utf8))
        #expect(near == Array("agent-c".utf8) && Self.address(near) != Self.address(other))
        #expect(table.interned([]) == [])
        #expect(table.count == 4)
    }

    @Test("byte equality by memcmp agrees with the arrays' own, whatever their lengths and blocks")
    func sameBytesAgrees() {
        let samples: [[UInt8]] = [[], [0], [1], [0, 0], Array("/s/abc/x".utf8), Array("/s/abc/y".utf8), Array(repeating: 7, count: 64)]
        for a in samples {
            for b in samples {
                #expect(sameBytes(a, b) == (a == b))
                #expect((KeyBytes(a) == KeyBytes(b)) == (a == b))
                b.withUnsafeBytes { #expect(sameBytes(a, $0) == (a == b)) }
            }
        }
        var copy = samples[6]
        copy[63] = 8
        #expect(!sameBytes(samples[6], copy))
    }

    @Test("a key's hash is the same for the same bytes however they are held, and sets keys of every length apart")
    func keyHashes() {
        // Every length a word-at-a-time hash treats apart: under eight bytes, a whole word, a word
        // and a tail, several words; keys that differ only in their first, middle or last byte,
        // or only in trailing zeros (the padding of a short tail must not hide them).
        var keys: Set<[UInt8]> = []
        for length in 0...40 {
            let base = (0..<length).map { UInt8(ascii: "a") &+ UInt8($0 % 26) }
            keys.insert(base)
            for position in [0, length / 2, length - 1] where position >= 0 && position < length {
                var changed = base
                changed[position] ^= 0x01
                keys.insert(changed)
            }
            keys.insert(base + [0])
        }
        var hashes: [UInt64: [UInt8]] = [:]
        for key in keys {
            let hash = key.withUnsafeBytes { KeyHash.of($0) }
            #expect(hashes[hash] == nil, "\(key) and \(hashes[hash] ?? []) hash alike")
            hashes[hash] = key
            // The same bytes elsewhere (a slice of a larger block, a native string) hash alike.
            let padded = [0xEE] + key + [0xEE]
            padded.withUnsafeBytes { #expect(KeyHash.of(UnsafeRawBufferPointer(rebasing: $0[1..<(1 + key.count)])) == hash) }
            if let text = String(validating: key, as: UTF8.self) {
                var grown = text
                grown.reserveCapacity(64)
                #expect(AgentKey(text)._rawHashValue(seed: 7) == AgentKey(grown)._rawHashValue(seed: 7))
                #expect(AgentKey(text)._rawHashValue(seed: 7) == KeyBytes(key)._rawHashValue(seed: 7))
            }
        }
        // A thousand keys as clone-rate writes them spread over a table's buckets.
        let bench = (0..<1000).map { Array("/bench/k\(1000 + $0)".utf8) }
        let buckets = Set(bench.map { key in key.withUnsafeBytes { KeyHash.mixed(KeyHash.of($0), seed: 12345) } & 1023 })
        #expect(buckets.count > 550, "1,000 keys fell into \(buckets.count) of 1,024 buckets")
    }

    @Test("a key's bytes checked eight at a time agree with a check of each byte, for every byte at every place")
    func printableWords() {
        func plain(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { $0 >= 0x21 && $0 <= 0x7E } }
        for length in [1, 7, 8, 9, 12, 15, 16, 17, 24, 31] {
            let base = (0..<length).map { UInt8(0x21 + ($0 * 7) % 94) }
            #expect(base.withUnsafeBytes { CloneKeyRules.isPrintableASCII($0) })
            for position in 0..<length {
                for byte in UInt8.min...UInt8.max {
                    var key = base
                    key[position] = byte
                    let words = key.withUnsafeBytes { CloneKeyRules.isPrintableASCII($0) }
                    #expect(words == plain(key), "\(length) bytes, 0x\(String(byte, radix: 16)) at \(position)")
                }
            }
        }
        // Through the check a received key takes: the first bad byte is the one the error names.
        var key = Array("/bench/k1000/x".utf8)
        key[9] = 0x7F
        _ = key.withUnsafeBytes { raw in
            #expect(throws: CloneDecodeError.self) { try CloneKeyRules.validate(key: raw) }
        }
        let good = Array("/s/abcdef0123456789/nav".utf8)
        good.withUnsafeBytes { raw in
            #expect(throws: Never.self) { try CloneKeyRules.validate(key: raw) }
        }
    }

    @Test("a write order's name read through the table is the same name, shared; bad ones are refused alike")
    func numberedNamesThroughTheTable() {
        var table = InternedBytes(capacity: 8)
        let text = Array("0123456789abcdef:17".utf8)
        let plain = NumberedName(text[...])
        let first = NumberedName(text[...], names: &table)
        let second = NumberedName(text[...], names: &table)
        #expect(first == plain && second == plain)
        #expect(first?.number == 17)
        #expect(Self.address(first!.name) == Self.address(second!.name))
        for bad in ["abc", ":17", "abc:", "abc:1x", "abc:123456789012345678901"] {
            #expect(NumberedName(Array(bad.utf8)[...], names: &table) == nil, "\(bad)")
            #expect(NumberedName(Array(bad.utf8)[...]) == nil, "\(bad)")
        }
    }

    @Test("a numbered name splits as the plain reading of its text does, for every short text of colons, digits and letters")
    func numberedNamesAgainstTheText() {
        // The reading: the name is everything before the last colon (not empty), the number the
        // 1 to 20 digits after it, and it must fit in a UInt64.
        func reference(_ text: String) -> (name: String, number: UInt64)? {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            let name = String(text[..<colon]), digits = text[text.index(after: colon)...]
            guard !name.isEmpty, !digits.isEmpty, digits.count <= 20, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let number = UInt64(digits) else { return nil }
            return (name, number)
        }
        let alphabet = Array("a:09".utf8)
        var generator = SystemRandomNumberGenerator()
        var texts = ["18446744073709551615", "a:18446744073709551615", "a:18446744073709551616", "a:00000000000000000001",
                     "a:000000000000000000001", "a:99999999999999999999", "x:y:7"]
        // Every text of up to 6 characters over the alphabet, then longer random ones.
        var short: [[UInt8]] = [[]]
        for _ in 1...6 {
            short = short.flatMap { prefix in alphabet.map { prefix + [$0] } }
            texts += short.map { String(decoding: $0, as: UTF8.self) }
        }
        for _ in 0..<2_000 {
            let count = Int.random(in: 7...26, using: &generator)
            texts.append(String((0..<count).map { _ in Character(Unicode.Scalar(alphabet.randomElement(using: &generator)!)) }))
        }
        for text in texts {
            let parsed = NumberedName(Array(text.utf8)[...])
            let expected = reference(text)
            #expect(parsed?.name == expected.map { Array($0.name.utf8) }, "\(text)")
            #expect(parsed?.number == expected?.number, "\(text)")
        }
    }

    @Test("a UUID read from a 16-byte frame, as an array, a slice or bytes in place, is the UUID written")
    func uuidFrames() {
        let uuid = UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!
        let frame = uuid.frame
        #expect(frame.count == 16 && frame.first == 0x0F && frame.last == 0xF0)
        #expect(UUID(frame: frame) == uuid)
        #expect(UUID(frame: ([0xAA] + frame + [0xBB])[1...16]) == uuid)
        frame.withUnsafeBytes { #expect(UUID(frame: $0) == uuid) }
        frame.withUnsafeBytes { #expect(UUID(wire: $0) == uuid && UUID(wire: $0).uuidString == uuid.uuidString) }
        ([0xAA] + frame).withUnsafeBytes { #expect(UUID(wire: UnsafeRawBufferPointer(rebasing: $0[1...])) == uuid) }
        #expect(UUID(frame: Array(frame.dropLast())) == nil)
        #expect(UUID(frame: frame + [0]) == nil)
        #expect(UUID(frame: [UInt8]()) == nil)
    }
}
