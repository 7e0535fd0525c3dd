import Foundation
@testable import MessagePath
import Testing

/// Session capabilities (MessagePath): tokens made under the host's key and checked by the
/// plugins' runtimes and the Clone server of a closed host.
@Suite("Session capabilities")
struct SessionCapabilityTests {
    let key = CapabilityKey.generate()

    @Test("a token grants its right on its session only, under its key only")
    func tokensAreBoundToRightSessionAndKey() {
        let drive = key.token(.drive, session: "abc")
        #expect(drive.hasPrefix("drive.") && drive.count == "drive.".count + 22)
        #expect(key.right(of: drive, session: "abc") == .drive)
        #expect(key.right(of: drive, session: "abd") == nil)
        #expect(CapabilityKey.generate().right(of: drive, session: "abc") == nil)
        // A token relabelled with a stronger right is another right's mac: refused.
        let watch = key.token(.watch, session: "abc")
        let relabelled = "drive." + watch.dropFirst("watch.".count)
        #expect(key.right(of: relabelled, session: "abc") == nil)
        for garbage in ["", "drive", "drive.", "admin." + drive.dropFirst(6), drive + "A", String(drive.dropLast()), "drive.!!!!"] {
            #expect(key.right(of: garbage, session: "abc") == nil, "\(garbage)")
        }
    }

    @Test("a kept mac checks every token again in full: a forged or another key's token stays refused")
    func keptMacsStillCheckEveryToken() {
        let key = CapabilityKey.generate()
        let drive = key.token(.drive, session: "s1")
        #expect(key.right(of: drive, session: "s1") == .drive)
        #expect(key.macs.count == 1, "the first check keeps the expected mac of (s1, drive)")
        for _ in 0..<100 { #expect(key.right(of: drive, session: "s1") == .drive) }
        #expect(key.macs.count == 1, "later checks reuse it")
        // Each of the 22 characters changed in turn: every one is refused, though (s1, drive) is kept.
        var characters = Array(drive)
        for index in "drive.".count..<characters.count {
            let original = characters[index]
            characters[index] = original == "A" ? "B" : "A"
            #expect(key.right(of: String(characters), session: "s1") == nil, "\(String(characters))")
            characters[index] = original
        }
        #expect(CapabilityKey.generate().right(of: drive, session: "s1") == nil)
        #expect(key.right(of: CapabilityKey.generate().token(.drive, session: "s1"), session: "s1") == nil)
        // Copies of a key share what it keeps; equality is the key's bytes alone.
        let copy = key
        #expect(copy.right(of: drive, session: "s1") == .drive && copy.macs.count == 1)
        #expect(CapabilityKey(hex: key.hex) == key)
    }

    @Test("the mac's base64url: 22 characters, padding tolerated, nothing else")
    func macTextIsStrict() {
        let key = CapabilityKey.generate()
        let drive = key.token(.drive, session: "s2")
        #expect(key.right(of: drive + "==", session: "s2") == .drive, "padded as standard base64 would be")
        #expect(key.right(of: drive + "=", session: "s2") == nil && key.right(of: drive + "===", session: "s2") == nil)
        // The 22nd character carries 2 bits and 4 zero bits: a non-zero filler is another text, refused.
        let last = drive.last!
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let value = alphabet.firstIndex(of: last)!
        #expect(value & 0b1111 == 0)
        #expect(key.right(of: String(drive.dropLast()) + String(alphabet[value | 1]), session: "s2") == nil)
        for garbage in [String(drive.dropLast(2)), drive + "A", drive.replacingOccurrences(of: ".", with: ".+"), "drive." + String(repeating: "A", count: 64)] {
            #expect(key.right(of: garbage, session: "s2") == nil, "\(garbage)")
        }
    }

    @Test("the mac's text is standard base64url, both ways")
    func macTextMatchesFoundationsBase64() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let standard = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let mac = MacCache.Mac(bytes)
            #expect(mac.base64URL == standard)
            let decoded = Array(standard.utf8).withUnsafeBufferPointer { MacCache.Mac(base64URL: $0[...]) }
            #expect(decoded == mac)
        }
    }

    @Test("the kept macs are bounded")
    func keptMacsAreBounded() {
        let key = CapabilityKey.generate()
        for index in 0..<(MacCache.capacity + 10) {
            let session = "s\(index)"
            #expect(key.right(of: key.token(.watch, session: session), session: session) == .watch)
        }
        #expect(key.macs.count <= MacCache.capacity)
    }

    @Test("rights cover what they should: plugin ⊇ drive ⊇ watch")
    func rightsCover() {
        #expect(key.allows(key.token(.plugin, session: "s"), .drive, session: "s"))
        #expect(key.allows(key.token(.drive, session: "s"), .watch, session: "s"))
        #expect(!key.allows(key.token(.watch, session: "s"), .drive, session: "s"))
        #expect(!key.allows(key.token(.drive, session: "s"), .plugin, session: "s"))
    }

    @Test("the key survives its hex text; damaged text is refused")
    func hexRoundTrip() {
        #expect(CapabilityKey(hex: key.hex) == key)
        #expect(CapabilityKey(hex: key.hex + "\n") == key)
        #expect(CapabilityKey(hex: String(key.hex.dropLast())) == nil)
        #expect(CapabilityKey(hex: String(repeating: "zz", count: 32)) == nil)
    }

    @Test("a client reads a session's keys only with a capability for it; plugins and operators read all")
    func readsNeedCapabilities() {
        let access = BusAccess(capabilities: key)
        let prefix = Array("/s/abc/".utf8)
        #expect(!access.mayRead(prefix, as: .client))
        #expect(access.mayRead(prefix, as: .client, capability: key.token(.watch, session: "abc")))
        #expect(access.mayRead(Array("/s/abc/nav".utf8), as: .client, capability: key.token(.drive, session: "abc")))
        #expect(!access.mayRead(prefix, as: .client, capability: key.token(.drive, session: "xyz")))
        #expect(!access.mayRead(Array("/s/".utf8), as: .client, capability: key.token(.plugin, session: "")))
        #expect(access.mayRead(Array("/schema/movies".utf8), as: .client))
        #expect(access.mayRead(prefix, as: .operator) && access.mayRead(Array("/".utf8), as: .plugin))
        // Without a key (a host made so in tests) any one whole session is readable.
        #expect(BusAccess().mayRead(prefix, as: .client))
    }
}
