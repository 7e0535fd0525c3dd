import Testing
@testable import ZeroMQ

/// A socket's cache of short frames: the same bytes come back as the same array, one-off frames
/// do not push out the repeated ones, and long frames are never kept.
@Suite struct ShortFrameCacheTests {
    static func address(_ frame: Frame) -> UnsafeRawPointer? {
        frame.withUnsafeBytes { $0.baseAddress }
    }

    static func take(_ cache: inout ShortFrameCache, _ bytes: [UInt8]) -> Frame {
        bytes.withUnsafeBytes { cache.frame(for: $0) }
    }

    @Test func aRepeatedFrameIsTheSameArrayWithTheSameBytes() {
        var cache = ShortFrameCache()
        let header = Array("MDPW01".utf8)
        let first = Self.take(&cache, header)
        let second = Self.take(&cache, header)
        #expect(first == header && second == header)
        #expect(Self.address(first) == Self.address(second))
        // Same length, other bytes: a frame of its own.
        let other = Self.take(&cache, Array("MDPC01".utf8))
        #expect(other == Array("MDPC01".utf8) && Self.address(other) != Self.address(first))
    }

    @Test func oneOffFramesDoNotPushOutRepeatedOnes() {
        var cache = ShortFrameCache()
        let header = Array("MDPW01".utf8)
        let kept = Self.take(&cache, header)
        for number in 0..<1_000 {
            // A sequence number or write id per message, with the header met again between them.
            _ = Self.take(&cache, withUnsafeBytes(of: UInt64(number).bigEndian) { Array($0) })
            #expect(Self.address(Self.take(&cache, header)) == Self.address(kept), "evicted after \(number) one-off frames")
        }
    }

    @Test func longFramesAreNotKept() {
        var cache = ShortFrameCache()
        let body = [UInt8](repeating: 7, count: ShortFrameCache.longest + 1)
        let first = Self.take(&cache, body)
        let second = Self.take(&cache, body)
        #expect(first == body && second == body)
        #expect(Self.address(first) != Self.address(second))
    }

    @Test func framesThatSeldomRepeatPassByTheCacheForAWhile() {
        var cache = ShortFrameCache()
        let header = Array("KVPUB".utf8)
        // A subscriber's stream: a new key, sequence and id every time, no repeated frame.
        var number: UInt64 = 0
        while !cache.isStandingAside && number < UInt64(ShortFrameCache.window) * 2 {
            number += 1
            _ = Self.take(&cache, withUnsafeBytes(of: number.bigEndian) { Array($0) })
        }
        #expect(cache.isStandingAside, "still searching after \(number) frames that never repeated")
        #expect(number == UInt64(ShortFrameCache.window))
        // Standing aside, a repeated frame is a new array each time, with the same bytes.
        let first = Self.take(&cache, header)
        let second = Self.take(&cache, header)
        #expect(first == header && second == header && Self.address(first) != Self.address(second))
        // After the pause it looks again, and repeated frames are kept as before.
        for _ in 0..<ShortFrameCache.pause { _ = Self.take(&cache, header) }
        #expect(!cache.isStandingAside)
        let kept = Self.take(&cache, header)
        #expect(Self.address(Self.take(&cache, header)) == Self.address(kept))
    }

    @Test func aStreamThatRepeatsEnoughKeepsTheCache() {
        var cache = ShortFrameCache()
        let header = Array("MDPW01".utf8)
        // One repeated frame in four: an MDP header beside three one-off frames.
        for number in 0..<(ShortFrameCache.window * 8) {
            if number % 4 == 0 {
                _ = Self.take(&cache, header)
            } else {
                _ = Self.take(&cache, withUnsafeBytes(of: UInt64(number).bigEndian) { Array($0) })
            }
            #expect(!cache.isStandingAside, "stood aside after \(number) frames, a quarter of them repeated")
        }
    }
}
