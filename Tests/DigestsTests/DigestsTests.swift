import Digests
import Foundation
import Testing

@Suite("SHA-256 and HMAC-SHA256")
struct DigestsTests {
    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    @Test("SHA-256 gives FIPS 180-2's digests, whole or fed in pieces of any size")
    func sha256Vectors() {
        let vectors: [(String, String)] = [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ]
        for (text, digest) in vectors {
            #expect(Self.hex(SHA256.hash(Array(text.utf8))) == digest, "SHA-256 of \"\(text)\"")
            var pieces = SHA256()
            for byte in text.utf8 { pieces.update([byte]) }
            #expect(Self.hex(pieces.finalize()) == digest, "SHA-256 of \"\(text)\" fed a byte at a time")
        }
        // A million "a": many blocks, fed in uneven pieces.
        var million = SHA256()
        var left = 1_000_000
        var size = 1
        while left > 0 {
            let piece = min(size, left)
            million.update([UInt8](repeating: UInt8(ascii: "a"), count: piece))
            left -= piece
            size = size * 3 % 1_000 + 1
        }
        #expect(Self.hex(million.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("a copy of a hasher goes on from the same state, and finalize leaves the hasher as it was")
    func copiesShareTheirPrefix() {
        var prefix = SHA256()
        prefix.update(Array("ab".utf8))
        var first = prefix
        first.update(Array("c".utf8))
        #expect(Self.hex(first.finalize()) == Self.hex(SHA256.hash(Array("abc".utf8))))
        #expect(Self.hex(first.finalize()) == Self.hex(SHA256.hash(Array("abc".utf8))), "finalize twice gives the same digest")
        var second = prefix
        second.update(Array("d".utf8))
        #expect(Self.hex(second.finalize()) == Self.hex(SHA256.hash(Array("abd".utf8))))
        #expect(Self.hex(prefix.finalize()) == Self.hex(SHA256.hash(Array("ab".utf8))))
    }

    @Test("finalize(into:) writes the same 32 bytes as finalize, touches nothing past them, and leaves the hasher going on")
    func finalizeIntoAPointer() {
        var hasher = SHA256()
        hasher.update(Array("ab".utf8))
        var buffer = [UInt8](repeating: 0xEE, count: SHA256.byteCount + 8)
        buffer.withUnsafeMutableBufferPointer { hasher.finalize(into: $0.baseAddress!) }
        #expect(Self.hex(Array(buffer[..<SHA256.byteCount])) == Self.hex(SHA256.hash(Array("ab".utf8))))
        #expect(buffer[SHA256.byteCount...].allSatisfy { $0 == 0xEE }, "the bytes after the digest are left alone")
        hasher.update(Array("c".utf8))
        buffer.withUnsafeMutableBufferPointer { hasher.finalize(into: $0.baseAddress!) }
        #expect(Self.hex(Array(buffer[..<SHA256.byteCount])) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("HMAC-SHA256 gives RFC 4231's codes: short key, short key and data, a key longer than a block; and no key")
    func hmacVectors() {
        let cases: [([UInt8], [UInt8], String)] = [
            ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
            // No key at all (Python's hmac.new(b"", b"flowbus", sha256) gives the same).
            ([], Array("flowbus".utf8), "e5e18b62a07ab99c145375fc151cf3a970dd8e833378d09cffea5457dc6b8cda"),
        ]
        for (key, message, code) in cases {
            #expect(Self.hex(HMACSHA256.code(for: message, key: key)) == code)
        }
    }
}
