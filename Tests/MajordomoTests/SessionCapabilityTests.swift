import MessagePath
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
