import Clone
import Foundation
import Testing
import ZeroMQ

@Suite("12/CHP codec")
struct CloneCodecTests {
    static let uuid = UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!

    static let roundTrips: [(CloneMessage, CloneChannel)] = [
        (.icanhaz(subtree: ""), .snapshotRequest),
        (.icanhaz(subtree: "/s/abc/"), .snapshotRequest),
        (.kvsync(key: "/s/abc/nav", sequence: 42, value: Array("stack".utf8)), .snapshotReply),
        (.kthxbai(sequence: 1 << 40, subtree: "/s/"), .snapshotReply),
        (.kthxbai(sequence: 0, subtree: ""), .snapshotReply),
        (.hugz(sequence: 0), .publisher),
        (.kvpub(CloneRecord(key: "/a", sequence: 7, uuid: uuid, properties: [.init(name: "ttl", value: "2"), .init(name: "sprev", value: "5")], value: [1, 2, 3])), .publisher),
        (.kvpub(CloneRecord(key: "/a", sequence: 8, value: [])), .publisher),
        (.kvset(CloneRecord(key: "/vm/signin/state", uuid: uuid, properties: [.init(name: "x", value: "a=b")], value: [0])), .collector),
    ]

    @Test("every command survives encode then decode", arguments: 0..<roundTrips.count)
    func roundTrip(index: Int) throws {
        let (message, channel) = Self.roundTrips[index]
        let decoded = try CloneMessage.decode(message.frames, on: channel)
        #expect(decoded == message)
        #expect(decoded.frames == message.frames)
    }

    @Test func layoutsAreTheRFCs() {
        #expect(CloneMessage.icanhaz(subtree: "/s/").frames == [Array("ICANHAZ?".utf8), Array("/s/".utf8)])
        #expect(CloneMessage.hugz(sequence: 0).frames == [Array("HUGZ".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], [], []])
        #expect(CloneMessage.kthxbai(sequence: 258, subtree: "/x/").frames
            == [Array("KTHXBAI".utf8), [0, 0, 0, 0, 0, 0, 1, 2], [], [], Array("/x/".utf8)])
        let record = CloneRecord(key: "/k", sequence: 1, uuid: Self.uuid, properties: [.init(name: "ttl", value: "1")], value: [9])
        let frames = CloneMessage.kvpub(record).frames
        #expect(frames.count == 5)
        #expect(frames[1] == [0, 0, 0, 0, 0, 0, 0, 1])
        #expect(frames[2].count == 16)
        #expect(frames[3] == Array("ttl=1\n".utf8))
    }

    static let badInputs: [([[UInt8]], CloneChannel, CloneBadInput)] = [
        ([Array("ICANHAZ?".utf8)], .snapshotRequest, .malformedFrames),
        ([Array("GIMME".utf8), []], .snapshotRequest, .unknownCommand),
        ([Array("ICANHAZ?".utf8), Array("/s".utf8)], .snapshotRequest, .invalidSubtree),
        ([Array("ICANHAZ?".utf8), Array("//".utf8)], .snapshotRequest, .invalidSubtree),
        ([Array("/k".utf8), [0, 0, 0, 1], [], [], []], .collector, .malformedFrames),
        ([Array("/k".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [1, 2, 3], [], []], .collector, .malformedFrames),
        ([Array("/k".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [], [], []] + [[1]], .collector, .malformedFrames),
        ([Array("k".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [], [], [1]], .collector, .invalidKey),
        ([Array("/a b".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [], [], [1]], .collector, .invalidKey),
        ([Array(repeating: UInt8(ascii: "/"), count: 256), [0, 0, 0, 0, 0, 0, 0, 1], [], [], [1]], .collector, .invalidKey),
        ([Array("HUGZ".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [], [], [1]], .collector, .reservedKey),
        ([Array("KTHXBAI".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [], [], [1]], .collector, .reservedKey),
        ([Array("/k".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [], Array("ttl=1".utf8), [1]], .collector, .malformedProperties),
        ([Array("/k".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [], Array("novalue\n".utf8), [1]], .collector, .malformedProperties),
        ([Array("/k".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [], Array("=v\n".utf8), [1]], .collector, .malformedProperties),
        ([Array("HUGZ".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], [], [1]], .publisher, .malformedFrames),
        ([Array("KTHXBAI".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], [], Array("bad".utf8)], .snapshotReply, .invalidSubtree),
    ]

    @Test("bad input fails with a typed error of the right kind", arguments: 0..<badInputs.count)
    func badInput(index: Int) {
        let (frames, channel, kind) = Self.badInputs[index]
        #expect {
            _ = try CloneMessage.decode(frames, on: channel)
        } throws: { error in
            (error as? CloneDecodeError)?.kind == kind
        }
    }

    static let zguideUUID: [UInt8] = withUnsafeBytes(of: uuid.uuid) { Array($0) }
    static let sequence7: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 7]

    /// What the zguide's kvmsg sends a client, and what a liberal client makes of it.
    static let liberalInputs: [([[UInt8]], CloneChannel, CloneMessage, CloneLeniency?)] = [
        ([Array("/k".utf8), sequence7, zguideUUID, Array("ttl=1700000000.5\n".utf8), [1]], .snapshotReply,
         .kvsync(key: "/k", sequence: 7, value: [1]), .kvsyncFrames),
        ([Array("/k".utf8), sequence7, [], Array("ttl=30\n".utf8), [1]], .snapshotReply,
         .kvsync(key: "/k", sequence: 7, value: [1]), .kvsyncFrames),
        ([Array("KTHXBAI".utf8), sequence7, zguideUUID, [], Array("/s/".utf8)], .snapshotReply,
         .kthxbai(sequence: 7, subtree: "/s/"), .kthxbaiFrames),
        ([Array("KTHXBAI".utf8), sequence7, [], [], []], .snapshotReply, .kthxbai(sequence: 7, subtree: ""), nil),
        ([Array("HUGZ".utf8), sequence7, zguideUUID, [], []], .publisher, .hugz(sequence: 7), .hugzFrames),
        ([Array("HUGZ".utf8), sequence7, [], [], []], .publisher, .hugz(sequence: 7), nil),
        ([Array("/k".utf8), sequence7, zguideUUID, Array("ttl=30\n".utf8), [1]], .publisher,
         .kvpub(CloneRecord(key: "/k", sequence: 7, uuid: uuid, properties: [.init(name: "ttl", value: "30")], value: [1])), nil),
    ]

    @Test("a client accepts the zguide's frames 2-3 and says so; the strict reading refuses them", arguments: 0..<liberalInputs.count)
    func liberalDecoding(index: Int) throws {
        let (frames, channel, message, leniency) = Self.liberalInputs[index]
        let decoded = try CloneMessage.decodeLiberally(frames, on: channel)
        #expect(decoded.message == message)
        #expect(decoded.tolerated == leniency)
        if leniency != nil {
            #expect(throws: CloneDecodeError.self) { _ = try CloneMessage.decode(frames, on: channel) }
        } else {
            #expect(try CloneMessage.decode(frames, on: channel) == message)
        }
    }

    @Test func liberalDecodingStillRefusesWhatNoServerSends() {
        let refused: [([[UInt8]], CloneChannel, CloneBadInput)] = [
            ([Array("HUGZ".utf8), Self.sequence7, Self.zguideUUID, [], [1]], .publisher, .malformedFrames),
            ([Array("/k".utf8), Self.sequence7, [1, 2, 3], [], [1]], .publisher, .malformedFrames),
            ([Array("/k".utf8), [0, 7], Self.zguideUUID, [], [1]], .snapshotReply, .malformedFrames),
            ([Array("KTHXBAI".utf8), Self.sequence7, Self.zguideUUID, [], Array("bad".utf8)], .snapshotReply, .invalidSubtree),
            ([Array("/k".utf8), Self.sequence7, [1, 2, 3], [], [1]], .collector, .malformedFrames),
        ]
        for (frames, channel, kind) in refused {
            #expect {
                _ = try CloneMessage.decodeLiberally(frames, on: channel)
            } throws: { error in
                (error as? CloneDecodeError)?.kind == kind
            }
        }
    }

    @Test func valueLimitIsEnforced() {
        let frames = CloneMessage.kvset(CloneRecord(key: "/k", value: Array(repeating: 1, count: 11))).frames
        #expect(throws: CloneDecodeError.valueTooLarge(size: 11, limit: 10)) {
            _ = try CloneMessage.decode(frames, on: .collector, maxValueBytes: 10)
        }
    }

    @Test func propertiesKeepOrderAndKnowTTLAndSprev() throws {
        let properties = try CloneProperties(decoding: Array("b=2\nttl=1.5\nsprev=17\na=x=y\n".utf8))
        #expect(properties.map(\.name) == ["b", "ttl", "sprev", "a"])
        #expect(properties["a"] == "x=y")
        #expect(properties.ttl == .milliseconds(1500))
        #expect(properties.sessionPrevious == 17)
        #expect(properties.encoded == Array("b=2\nttl=1.5\nsprev=17\na=x=y\n".utf8))
        #expect(try CloneProperties(decoding: []).isEmpty)
        #expect(try CloneProperties(decoding: Array("ttl=soon\n".utf8)).ttl == nil)
    }

    @Test func sessionSubtreeIsTheFirstTwoSegments() {
        #expect(CloneKeyRules.sessionSubtree(of: "/s/abc/nav") == "/s/abc/")
        #expect(CloneKeyRules.sessionSubtree(of: "/s/abc/") == "/s/abc/")
        #expect(CloneKeyRules.sessionSubtree(of: "/s/abc") == nil)
        #expect(CloneKeyRules.sessionSubtree(of: "/s//x") == nil)
        #expect(CloneKeyRules.sessionSubtree(of: "/vm/abc/x") == nil)
    }
}

@Suite("Clone endpoints")
struct CloneEndpointsTests {
    @Test func tcpTakesThreePorts() throws {
        let endpoints = try CloneEndpoints(base: "tcp://127.0.0.1:5556")
        #expect(endpoints == CloneEndpoints(
            snapshot: "tcp://127.0.0.1:5556", publisher: "tcp://127.0.0.1:5557", collector: "tcp://127.0.0.1:5558"))
        #expect(try CloneEndpoints(base: "tcp://[::1]:7000").collector == "tcp://[::1]:7002")
    }

    @Test func ipcTakesThreePaths() throws {
        let endpoints = try CloneEndpoints(base: "ipc:///tmp/fb/clone")
        #expect(endpoints.snapshot == "ipc:///tmp/fb/clone.snapshot")
        #expect(endpoints.publisher == "ipc:///tmp/fb/clone.publisher")
        #expect(endpoints.collector == "ipc:///tmp/fb/clone.collector")
    }

    @Test(arguments: ["inproc://x", "tcp://host", "tcp://host:*", "tcp://host:65534", "tcp://:5556", "ipc://", "udp://h:1"])
    func othersAreRefusedClearly(base: String) {
        #expect {
            _ = try CloneEndpoints(base: base)
        } throws: { error in
            "\(error)".contains("tcp://HOST:PORT")
        }
    }
}
