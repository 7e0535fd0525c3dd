@testable import Clone
import Testing

@Suite("The server's reading of a KVSET's properties")
struct KVSetPropertiesTests {
    static let frames: [String] = [
        "",
        "a=1\n",
        "ack=0123456789abcdef\nwseq=w1:17\nwgen=coord-app/0:2\nttl=1.5\nx=a=b\n",
        "sprev=9\nb=2\n",
        "x=1\nwseq=a:1\ny=2\nwseq=a:2\nz=3\n",
        "name=é ü\n",
        "ttl=2\nttl=soon\n",
        // The server's lines last (as an agent writes them), first, and between kept ones.
        "a=1\nb=2\nack=0123456789abcdef\nwseq=w1:17\n",
        "wseq=w1:17\na=1\n",
        "a=1\nwseq=w1:17\nb=2\nwgen=g:1\nc=3\nsprev=4\n",
    ]

    @Test("picks out the server's lines and keeps the others in order, as CloneProperties would", arguments: frames)
    func sameAsCloneProperties(text: String) throws {
        let frame = Array(text.utf8)
        let read = try KVSetProperties(frame)
        var expected = try CloneProperties(decoding: frame)
        func line(_ range: Range<Int>?) -> String? { range.map { frame[$0][...].text } }
        #expect(line(read.ackRange) == expected[CloneProperties.ackName])
        #expect(line(read.writeSequenceRange) == expected[CloneProperties.writeSequenceName])
        #expect(line(read.writerGenerationRange) == expected[CloneProperties.writerGenerationName])
        #expect(line(read.ttlRange) == expected[CloneProperties.ttlName])
        for name in [CloneProperties.ackName, CloneProperties.writeSequenceName, CloneProperties.writerGenerationName, CloneProperties.sessionPreviousName] {
            expected.set(name, nil)
        }
        #expect(try CloneProperties(decoding: read.published) == expected)
    }

    @Test("a frame without the server's lines is published as it came")
    func untouched() throws {
        let frame = Array("a=1\nttl=3\n".utf8)
        #expect(try KVSetProperties(frame).published == frame)
    }

    @Test("what is kept after the server's lines go holds no room to spare, and nothing at all when empty")
    func keptExactly() throws {
        let onlyServerLines = Array("ack=0123456789abcdef\nwseq=w1:17\nwgen=coord-app/0:2\n".utf8)
        #expect(try KVSetProperties(onlyServerLines).published.capacity == 0)
        let mixed = Array("ack=0123456789abcdef\nwseq=w1:17\nwgen=coord-app/0:2\nx=1\n".utf8)
        let published = try KVSetProperties(mixed).published
        #expect(published == Array("x=1\n".utf8))
        // The reserve was the whole frame; the kept copy is its own size (malloc may round it up).
        #expect(published.capacity < 32)
        let keptFirst = Array("x=1\nack=0123456789abcdef\nwseq=w1:17\nwgen=coord-app/0:2\n".utf8)
        let prefix = try KVSetProperties(keptFirst).published
        #expect(prefix == Array("x=1\n".utf8))
        #expect(prefix.capacity < 32)
    }

    @Test("refuses what CloneProperties refuses", arguments: ["ttl=1", "novalue\n", "=v\n", "a b=1\n"])
    func malformed(text: String) {
        #expect(throws: CloneDecodeError.self) { try KVSetProperties(Array(text.utf8)) }
        #expect(throws: CloneDecodeError.self) { try CloneProperties(decoding: Array(text.utf8)) }
    }

    @Test("refuses a value that is not UTF-8, and takes one that is")
    func utf8() throws {
        #expect(throws: CloneDecodeError.self) { try KVSetProperties(Array("a=".utf8) + [0xC3, 0x28] + [0x0A]) }
        #expect(try KVSetProperties(Array("a=".utf8) + [0xC3, 0xA9] + [0x0A]).published.count == 5)
    }

    @Test("a numbered name splits at its last colon, also from a slice that does not start at 0")
    func numberedName() throws {
        let bytes = Array("xx=coord-app/0:2:41".utf8)
        let parsed = try #require(NumberedName(bytes[3...]))
        #expect(parsed.name == Array("coord-app/0:2".utf8))
        #expect(parsed.number == 41)
        #expect(NumberedName(bytes[3..<16]) == NumberedName("coord-app/0:2"))
        for bad in [":1", "a:", "a:1x", "a", "a:123456789012345678901"] {
            #expect(NumberedName(bad) == nil, "\(bad)")
            let padded = Array(("zz" + bad).utf8)
            #expect(NumberedName(padded[2...]) == nil, "\(bad) from a slice")
        }
    }
}
