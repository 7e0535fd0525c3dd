import FlowProtocol
import Foundation
import Testing

@Suite("The .frames format")
struct FrameFormatTests {
    @Test func parsesFramesCommentsEmptyFramesAndBlankLines() throws {
        let text = """
            # a comment
            #tight comment

            4d4450433031
            -
              00ff  \r
            """
        let parsed = try FrameVectors.parse(text)
        #expect(parsed.frames == [Array("MDPC01".utf8), [], [0x00, 0xff]])
        #expect(parsed.comments == ["a comment", "tight comment"])
    }

    @Test(arguments: [
        ("abc", FrameVectorError.oddHexLength(file: "<text>", line: 1)),
        ("-\nAB", .invalidHexCharacter(file: "<text>", line: 2, character: "A")),
        ("0g", .invalidHexCharacter(file: "<text>", line: 1, character: "g")),
        ("# only a comment\n\n", .noFrames(file: "<text>")),
    ])
    func rejectsBadText(text: String, expected: FrameVectorError) {
        #expect(throws: expected) { try FrameVectors.parse(text) }
    }

    @Test func renderRoundTrips() throws {
        let frames: [[UInt8]] = [[], [0x01, 0xab], Array("HUGZ".utf8), []]
        let text = FrameVectors.render(frames, comments: ["why", "how"])
        #expect(text == "# why\n# how\n-\n01ab\n4855475a\n-\n")
        let parsed = try FrameVectors.parse(text)
        #expect(parsed.frames == frames)
        #expect(parsed.comments == ["why", "how"])
    }

    @Test func everyVectorFileParses() throws {
        let vectors = try FrameVectors.loadAll(in: Vectors.directory)
        #expect(vectors.count >= 16)
        for vector in vectors {
            #expect(!vector.comments.isEmpty, "\(vector.name) explains nothing")
        }
    }
}

@Suite("MDP golden vectors")
struct MajordomoVectorTests {
    static let client = Array("MDPC01".utf8)
    static let worker = Array("MDPW01".utf8)
    static let echo = Array("flowbus.echo".utf8)
    static let clientAddress: [UInt8] = [0x00, 0x6b, 0x8b, 0x45, 0x67]

    @Test func clientRequestAndReply() throws {
        let request = try Vectors.frames("mdp-client-request").frames
        #expect(request == [[], Self.client, Self.echo, try Vectors.bytes("envelope-echo-request")])
        #expect(try Envelope.decodeChecked(request[3]).unwrap(Flowbus_V1_Echo.self).text == "hello")

        let reply = try Vectors.frames("mdp-client-reply").frames
        #expect(reply == [[], Self.client, Self.echo, try Vectors.bytes("envelope-echo-reply")])

        let tooLarge = try Vectors.frames("mdp-client-reply-too-large").frames
        #expect(Array(tooLarge.prefix(3)) == [[], Self.client, Self.echo])
        #expect(try Envelope.decodeChecked(tooLarge[3]).carriedError?.code == .messageTooLarge)
    }

    @Test func workerCommands() throws {
        #expect(try Vectors.frames("mdp-worker-ready").frames == [[], Self.worker, [0x01], Self.echo])
        #expect(try Vectors.frames("mdp-worker-ready-credit").frames == [[], Self.worker, [0x01], Self.echo, Array("credit=16".utf8)])
        #expect(try Vectors.frames("mdp-worker-heartbeat").frames == [[], Self.worker, [0x04]])
        #expect(try Vectors.frames("mdp-worker-disconnect").frames == [[], Self.worker, [0x05]])
        #expect(
            try Vectors.frames("mdp-worker-request").frames
                == [[], Self.worker, [0x02], Self.clientAddress, [], try Vectors.bytes("envelope-echo-request")]
        )
        #expect(
            try Vectors.frames("mdp-worker-reply").frames
                == [[], Self.worker, [0x03], Self.clientAddress, [], try Vectors.bytes("envelope-echo-reply")]
        )
    }

    @Test func mmiService() throws {
        let mmi = Array("mmi.service".utf8)
        #expect(try Vectors.frames("mdp-mmi-service-request").frames == [[], Self.client, mmi, Self.echo])
        #expect(try Vectors.frames("mdp-mmi-service-reply").frames == [[], Self.client, mmi, Array("200".utf8)])
    }
}

@Suite("CHP golden vectors")
struct CloneVectorTests {
    static func sequence(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    static let uuid: [UInt8] = [
        0x9b, 0x2c, 0x5c, 0x1e, 0x4f, 0x7a, 0x4d, 0x2b, 0x8e, 0x3a, 0x1c, 0x2d, 0x3e, 0x4f, 0x5a, 0x6b,
    ]
    static let signinKey = CloneKey.viewModel(try! SessionID("abc"), try! ScreenName("signin"))

    @Test func snapshotExchange() throws {
        let subtree = CloneSubtree.session(try SessionID("abc")).bytes
        #expect(try Vectors.frames("chp-icanhaz").frames == [Array("ICANHAZ?".utf8), subtree])
        let kvsync = try Vectors.frames("chp-kvsync").frames
        #expect(kvsync == [CloneKey.navigation(try SessionID("abc")).bytes, Self.sequence(41), [], [], try Vectors.bytes("envelope-navigation")])
        #expect(try Vectors.frames("chp-kthxbai").frames == [Array("KTHXBAI".utf8), Self.sequence(42), [], [], subtree])
    }

    @Test func updates() throws {
        let value = try Vectors.bytes("envelope-viewstate")
        #expect(try Vectors.frames("chp-kvset").frames == [Self.signinKey.bytes, Self.sequence(0), Self.uuid, Array("ttl=30\n".utf8), value])
        #expect(
            try Vectors.frames("chp-kvpub").frames
                == [Self.signinKey.bytes, Self.sequence(43), Self.uuid, Array("ttl=30\nsprev=41\n".utf8), value]
        )
        #expect(
            try Vectors.frames("chp-kvpub-delete").frames
                == [Self.signinKey.bytes, Self.sequence(45), [], Array("sprev=43\n".utf8), []]
        )
        #expect(try Vectors.frames("chp-hugz").frames == [Array("HUGZ".utf8), Self.sequence(0), [], [], []])
    }

    @Test func valuesAreCheckedEnvelopesUnderValidKeys() throws {
        for name in ["chp-kvsync", "chp-kvset", "chp-kvpub"] {
            let frames = try Vectors.frames(name).frames
            _ = try CloneKey(parsing: String(decoding: frames[0], as: UTF8.self))
            _ = try Envelope.decodeChecked(frames[4])
        }
    }
}
