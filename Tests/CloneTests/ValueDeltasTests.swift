@testable import Clone
import Foundation
import Testing

/// Values kept as their differences from a similar one (issue 16: memory per session).
@Suite("Values packed against similar ones")
struct ValueDeltasTests {
    /// A navigation-like value of one session: the same words, its own id and time.
    static func value(session: String, time: Int, screens: Int = 3) -> [UInt8] {
        var text = "kind=flowbus.v1.Navigation session=\(session) writer=coord-app/0 "
        for screen in 0..<screens {
            text += "screen \(screen): title=Sign in, actions=[register Create account, forgotPassword Forgot password] "
        }
        text += "appear/\(session)/signin/1 at \(time)"
        return Array(text.utf8)
    }

    static func pack(_ deltas: inout ValueDeltas, _ value: [UInt8], _ key: String) throws -> [UInt8] {
        let packed = deltas.pack(value, key: Array(key.utf8))
        return try #require(packed, "\(value.count) bytes under \(key) were not packed")
    }

    /// The first key of a shape keeps its values whole; the same value under a second key of the
    /// shape becomes the shape's reference and packs against itself.
    static func first(_ deltas: inout ValueDeltas, _ value: [UInt8], _ key: String) throws -> [UInt8] {
        // Another key of the same shape: another session's, or another name under the same parent.
        var other = key + "-0"
        if key.hasPrefix("/s/"), let slash = key.dropFirst(3).firstIndex(of: "/") {
            other = String(key[..<slash]) + "-0" + String(key[slash...])
        }
        #expect(deltas.pack(value, key: Array(other.utf8)) == nil, "the first key of \(key)'s shape keeps its value whole")
        return try pack(&deltas, value, key)
    }

    @Test("values of one shape pack to a fraction of their size and unpack to the same bytes")
    func roundTrip() throws {
        var deltas = ValueDeltas()
        let first = Self.value(session: "aaaaaaaaaa", time: 1_795_895_737_544)
        let packedFirst = try Self.first(&deltas, first, "/s/aaaaaaaaaa/nav")
        #expect(packedFirst.count < 16, "the first becomes the reference: copies of it around its name, \(packedFirst.count) bytes")
        #expect(deltas.unpack(packedFirst, key: Array("/s/aaaaaaaaaa/nav".utf8)) == first)
        for (index, session) in ["bbbbbbbbbb", "c0c0c0c0c0", "dd.dd_dd-d"].enumerated() {
            let value = Self.value(session: session, time: 1_795_895_737_600 + index)
            let packed = try Self.pack(&deltas, value, "/s/\(session)/nav")
            #expect(packed.count * 4 < value.count, "\(value.count) bytes packed to \(packed.count)")
            #expect(deltas.unpack(packed, key: Array("/s/\(session)/nav".utf8)) == value)
            #expect(ValueDeltas.unpackedCount(packed) == value.count)
        }
        #expect(deltas.references.count == 1)
    }

    @Test("a key under a session is shaped by its path in the session, any other by its parent")
    func shapes() {
        #expect(ValueDeltas.shape(of: Array("/s/abc/nav".utf8)) == Array("/s//nav".utf8))
        #expect(ValueDeltas.shape(of: Array("/s/xyz/vm/signin".utf8)) == Array("/s//vm/signin".utf8))
        #expect(ValueDeltas.shape(of: Array("/c/app/abc".utf8)) == Array("/c/app/".utf8))
        #expect(ValueDeltas.shape(of: Array("/v/signin/abc".utf8)) == Array("/v/signin/".utf8))
        #expect(ValueDeltas.shape(of: Array("plain".utf8)) == [])
    }

    @Test("a key's name is its session's id under a session, else its last part, when long enough to pay")
    func names() {
        #expect(ValueDeltas.name(of: Array("/s/abcd1234/nav".utf8)).elementsEqual("abcd1234".utf8))
        #expect(ValueDeltas.name(of: Array("/s/abcd1234/vm/signin".utf8)).elementsEqual("abcd1234".utf8))
        #expect(ValueDeltas.name(of: Array("/c/app/abcd1234".utf8)).elementsEqual("abcd1234".utf8))
        #expect(ValueDeltas.name(of: Array("plainname".utf8)).elementsEqual("plainname".utf8))
        #expect(ValueDeltas.name(of: Array("/c/app/abc".utf8)).isEmpty, "3 bytes: written as they are")
        #expect(ValueDeltas.name(of: Array("/c/app/".utf8)).isEmpty)
    }

    @Test("the key's name in a value is one byte of its delta, and reads back as the key's own name")
    func namesInValues() throws {
        var deltas = ValueDeltas()
        let first = Self.value(session: "aaaaaaaaaa", time: 1_795_895_737_544)
        _ = try Self.first(&deltas, first, "/s/aaaaaaaaaa/nav")
        let value = Self.value(session: "bbbbbbbbbb", time: 1_795_895_737_545)
        let packed = try Self.pack(&deltas, value, "/s/bbbbbbbbbb/nav")
        // The same value under a key with a 3-byte name, so the delta writes the id as it is.
        var unnamed = ValueDeltas()
        _ = try Self.first(&unnamed, first, "/s/aaa/nav")
        let packedWithoutName = try Self.pack(&unnamed, value, "/s/bbb/nav")
        #expect(packed.count + 2 * 8 <= packedWithoutName.count,
                "the id twice: \(packed.count) bytes with names, \(packedWithoutName.count) without")
        #expect(deltas.unpack(packed, key: Array("/s/bbbbbbbbbb/nav".utf8)) == value)
        #expect(unnamed.unpack(packedWithoutName, key: Array("/s/bbb/nav".utf8)) == value)
        // Read for another key, the name is that key's: a delta belongs to its key.
        let other = deltas.unpack(packed, key: Array("/s/cccccccccc/nav".utf8))
        #expect(other == Self.value(session: "cccccccccc", time: 1_795_895_737_545))
        // A name that ends the value, and one of a different length from the reference's.
        let tail = Array("prefix of some length, the same in every value, then the key's name: zz-12345".utf8)
        _ = try Self.first(&deltas, Array("prefix of some length, the same in every value, then the key's name: q-1".utf8), "/t/q-1")
        let packedTail = try Self.pack(&deltas, tail, "/t/zz-12345")
        #expect(deltas.unpack(packedTail, key: Array("/t/zz-12345".utf8)) == tail)
    }

    @Test("a shape's first value stays whole and makes no reference; its second is the first reference")
    func lonelyShapes() throws {
        var deltas = ValueDeltas()
        let first = Self.value(session: "aaaaaaaaaa", time: 1)
        let changed = Self.value(session: "aaaaaaaaaa", time: 3, screens: 4)
        for value in [first, changed, first] {
            #expect(deltas.pack(value, key: Array("/s/aaaaaaaaaa/nav".utf8)) == nil)
        }
        #expect(deltas.references.isEmpty && deltas.referenceFootprint == 0, "a host's only session pays for no reference, however often it writes")
        let second = Self.value(session: "bbbbbbbbbb", time: 2)
        let packed = try Self.pack(&deltas, second, "/s/bbbbbbbbbb/nav")
        #expect(deltas.references.count == 1)
        #expect(deltas.unpack(packed, key: Array("/s/bbbbbbbbbb/nav".utf8)) == second)
        // The first, offered again (written again), packs against the second.
        let again = try Self.pack(&deltas, first, "/s/aaaaaaaaaa/nav")
        #expect(again.count * 4 < first.count)
        // Shapes seen once are remembered up to a limit, then forgotten all at once.
        for index in 0..<(ValueDeltas.lonelyShapesLimit + 10) {
            #expect(deltas.pack(first, key: Array("/p\(index)/aaaaaaaaaa".utf8)) == nil)
        }
        #expect(deltas.lonelyShapes.count <= ValueDeltas.lonelyShapesLimit)
        #expect(deltas.references.count == 1)
    }

    @Test("small values, unlike values and values past the limits stay as they are")
    func whatIsNotPacked() throws {
        var deltas = ValueDeltas(limits: .init(references: 2, referencesPerShape: 1))
        #expect(deltas.pack(Array("short".utf8), key: Array("/c/a/x".utf8)) == nil)
        let reference = Self.value(session: "aaaaaaaaaa", time: 1)
        _ = try Self.first(&deltas, reference, "/c/a/x")
        var random = SystemRandomNumberGenerator()
        let noise = (0..<300).map { _ in UInt8.random(in: 0...255, using: &random) }
        #expect(deltas.pack(noise, key: Array("/c/a/y".utf8)) == nil, "nothing like it, and its shape has no room for another reference")
        _ = try Self.first(&deltas, reference, "/c/b/x")
        #expect(deltas.pack(reference, key: Array("/c/c/x".utf8)) == nil, "the first of its shape")
        #expect(deltas.pack(reference, key: Array("/c/c/x".utf8)) == nil, "no room for a third reference")
        #expect(deltas.references.count == 2)
        let large = [UInt8](repeating: 7, count: deltas.limits.largestValue + 1)
        #expect(deltas.pack(large, key: Array("/c/d/x".utf8)) == nil)
    }

    @Test("a later value unlike the references becomes one more of its shape, up to the limit")
    func moreReferences() throws {
        var deltas = ValueDeltas(limits: .init(referencesPerShape: 2))
        var random = SystemRandomNumberGenerator()
        let values = (0..<3).map { _ in (0..<200).map { _ in UInt8.random(in: 0...255, using: &random) } }
        for (index, value) in values.prefix(2).enumerated() {
            let packed = try index == 0 ? Self.first(&deltas, value, "/c/n/k") : Self.pack(&deltas, value, "/c/n/k")
            #expect(deltas.unpack(packed, key: Array("/c/n/k".utf8)) == value)
        }
        #expect(deltas.pack(values[2], key: Array("/c/n/k".utf8)) == nil)
        #expect(deltas.references.count == 2)
        // Still packed against the better of the two.
        var near = values[1]
        near[100] ^= 0xFF
        let packed = try Self.pack(&deltas, near, "/c/n/other")
        #expect(packed.count < 20)
        #expect(deltas.unpack(packed, key: Array("/c/n/other".utf8)) == near)
    }

    @Test("random values near a reference unpack exactly (500 cases)")
    func randomEdits() throws {
        var deltas = ValueDeltas()
        var random = SystemRandomNumberGenerator()
        let base = (0..<600).map { _ in UInt8.random(in: 0...3, using: &random) }
        _ = try Self.first(&deltas, base, "/r/base")
        for _ in 0..<500 {
            var value = base
            for _ in 0..<Int.random(in: 0...20, using: &random) {
                switch Int.random(in: 0...2, using: &random) {
                case 0: value[Int.random(in: 0..<value.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                case 1: value.insert(contentsOf: (0..<Int.random(in: 1...9, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) },
                                     at: Int.random(in: 0...value.count, using: &random))
                default:
                    let start = Int.random(in: 0..<(value.count - 10), using: &random)
                    value.removeSubrange(start..<(start + Int.random(in: 1...9, using: &random)))
                }
            }
            if let packed = deltas.pack(value, key: Array("/r/x".utf8)) {
                #expect(deltas.unpack(packed, key: Array("/r/x".utf8)) == value)
                #expect(ValueDeltas.unpackedCount(packed) == value.count)
            }
        }
    }

    @Test("a damaged delta unpacks to nothing, never past its buffers")
    func damaged() throws {
        var deltas = ValueDeltas()
        let value = Self.value(session: "aaaaaaaaaa", time: 1)
        _ = try Self.first(&deltas, value, "/c/a/x")
        let packed = try Self.pack(&deltas, Self.value(session: "bbbbbbbbbb", time: 2), "/c/a/y")
        let key = Array("/c/a/y".utf8)
        #expect(deltas.unpack(packed, key: key) == Self.value(session: "bbbbbbbbbb", time: 2))
        #expect(deltas.unpack([], key: key) == nil)
        #expect(deltas.unpack([9, 10], key: key) == nil, "no reference 9")
        #expect(deltas.unpack(Array(packed.dropLast()), key: key) == nil, "cut short")
        var longer = packed
        longer.append(contentsOf: [0x03, 0x7F])
        #expect(deltas.unpack(longer, key: key) == nil, "a copy past the value's length")
        var named = packed
        named.append(0x01)
        #expect(deltas.unpack(named, key: key) == nil, "a name past the value's length")
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var noisy = packed
            noisy[Int.random(in: 0..<noisy.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            if let out = deltas.unpack(noisy, key: key) { #expect(out.count == ValueDeltas.unpackedCount(noisy)) }
            if let out = deltas.unpack(noisy, key: Array("/c/a/b".utf8)) { #expect(out.count == ValueDeltas.unpackedCount(noisy)) }
        }
    }
}
