@testable import Clone
import Testing

@Suite("Byte strings the server keeps once")
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
}
