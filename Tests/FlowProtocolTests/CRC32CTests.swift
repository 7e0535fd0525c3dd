import Foundation
import Testing
@testable import WireCheck

@Suite("CRC-32C")
struct CRC32CTests {
    /// The standard check value, and the test patterns of RFC 3720 (iSCSI), appendix B.4.
    @Test func knownValues() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.checksum((0..<32).map { UInt8(31 - $0) }) == 0x113F_DB5C)
        #expect(CRC32C.checksum([UInt8]()) == 0)
    }

    /// Eight bytes at a time gives what one byte at a time gives, at every length and offset.
    @Test func slicingAgreesWithTheBitwiseDefinition() {
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return crc ^ 0xFFFF_FFFF
        }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let bytes: [UInt8] = (0..<300).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        for start in 0..<9 {
            for end in stride(from: start, through: bytes.count, by: 7) {
                #expect(CRC32C.checksum(bytes[start..<end]) == bitwise(bytes[start..<end]), "bytes \(start)..<\(end)")
                let sliced = Array(bytes[start..<end]).withUnsafeBytes { CRC32C.checksumBySlicing($0) }
                #expect(sliced == bitwise(bytes[start..<end]), "tables, bytes \(start)..<\(end)")
            }
        }
    }

    /// This machine (x86-64 with SSE 4.2) uses the instruction, so the checks above tested it;
    /// the tables are what a processor without it uses.
    @Test func theInstructionIsUsedWhereThereIsOne() throws {
        #if arch(x86_64)
        #expect(CRC32C.usesInstruction == (try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)).contains(" sse4_2"))
        #else
        #expect(!CRC32C.usesInstruction)
        #endif
    }

    @Test func verifyTellsIntactMissingAndChanged() {
        let sealed = WireCheck.sealed(Array("hello".utf8))
        #expect(WireCheck.verify(sealed) == .intact)
        #expect(WireCheck.verify(Array(sealed.dropLast())) == .missing)
        #expect(WireCheck.verify(Array("hello".utf8)) == .missing)
        var changed = sealed
        changed[1] ^= 0x20
        guard case .mismatch = WireCheck.verify(changed) else {
            Issue.record("a changed byte was not seen")
            return
        }
        #expect(WireCheck.sealed([]) .count == 5)
        #expect(WireCheck.verify(WireCheck.sealed([])) == .intact)
    }
}
