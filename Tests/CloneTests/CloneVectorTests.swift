import Clone
import FlowProtocol
import Foundation
import Testing
import ZeroMQ

/// The 12/CHP golden vectors of Protocols/vectors: every one decodes on its channel and encodes
/// back to the same bytes, and the server turns the KVSET vector into the KVPUB layout.
@Suite("12/CHP golden vectors")
struct CloneVectorTests {
    static let channels: [String: CloneChannel] = [
        "chp-icanhaz": .snapshotRequest,
        "chp-kvsync": .snapshotReply,
        "chp-kthxbai": .snapshotReply,
        "chp-kvpub": .publisher,
        "chp-kvpub-delete": .publisher,
        "chp-hugz": .publisher,
        "chp-kvset": .collector,
    ]

    static func vector(_ name: String) throws -> FrameVector {
        let directory = try #require(FrameVectors.directory(nearFile: #filePath), "Protocols/vectors not found")
        return try FrameVectors.load(directory.appendingPathComponent("\(name).frames"))
    }

    @Test("decodes and re-encodes byte for byte", arguments: channels.keys.sorted())
    func roundTrip(name: String) throws {
        let vector = try Self.vector(name)
        let message = try CloneMessage.decode(vector.frames, on: try #require(Self.channels[name]))
        #expect(message.frames == vector.frames)
    }

    @Test func everyCHPVectorIsCovered() throws {
        let directory = try #require(FrameVectors.directory(nearFile: #filePath))
        let names = try FrameVectors.loadAll(in: directory).map(\.name).filter { $0.hasPrefix("chp-") }
        #expect(Set(names) == Set(Self.channels.keys))
    }

    @Test func theVectorsSayWhatTheyShould() throws {
        let kvpub = try CloneMessage.decode(try Self.vector("chp-kvpub").frames, on: .publisher)
        guard case .kvpub(let record) = kvpub else { Issue.record("not a KVPUB"); return }
        #expect(record.key == "/s/abc/vm/signin")
        #expect(record.sequence == 43)
        #expect(record.uuid == UUID(uuidString: "9b2c5c1e-4f7a-4d2b-8e3a-1c2d3e4f5a6b"))
        #expect(record.properties.ttl == .seconds(30))
        #expect(record.properties.sessionPrevious == 41)
        let delete = try CloneMessage.decode(try Self.vector("chp-kvpub-delete").frames, on: .publisher)
        guard case .kvpub(let deleted) = delete else { Issue.record("not a KVPUB"); return }
        #expect(deleted.value.isEmpty && deleted.uuid == nil && deleted.properties.sessionPrevious == 43)
        #expect(try CloneMessage.decode(try Self.vector("chp-kthxbai").frames, on: .snapshotReply)
            == .kthxbai(sequence: 42, subtree: "/s/abc/"))
    }

    @Test func theServerPublishesTheKVSETVectorInTheKVPUBLayout() async throws {
        let fixture = try CloneFixture()
        let subscriber = try ZMQSocket(context: fixture.context, type: .sub, linger: .zero)
        try subscriber.subscribe("/s/abc/")
        try subscriber.connect(fixture.endpoints.publisher)
        let writer = try ZMQSocket(context: fixture.context, type: .xpub, linger: .zero)
        try writer.connect(fixture.endpoints.collector)
        try writer.setReceiveTimeout(.seconds(5))
        _ = try writer.receiveFrame()
        #expect(await eventually { fixture.server!.statistics.subscriptionsReceived >= 1 })

        let kvset = try Self.vector("chp-kvset").frames
        try writer.send(kvset)
        try subscriber.setReceiveTimeout(.seconds(5))
        let published = try #require(try subscriber.receiveMessage())
        let expected = try Self.vector("chp-kvpub").frames
        #expect(published[0] == expected[0])
        #expect(published[1] == [0, 0, 0, 0, 0, 0, 0, 1])
        #expect(published[2] == expected[2])
        // The writer's properties first, then the server's sprev (0: the session's first KVPUB here).
        #expect(published[3] == Array("ttl=30\nsprev=0\n".utf8))
        #expect(published[4] == expected[4])
    }
}
