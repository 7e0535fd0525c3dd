@testable import Clone
import Foundation
import Testing
import ZeroMQ

/// A KVSET as `CloneAgent.set` makes it (checked and numbered on the writer's thread, its frames
/// written by the agent's thread as it sends them) is the record with the agent's lines set.
@Suite("KVSET lines")
struct KVSetLinesTests {
    static let propertyCases: [CloneProperties] = [
        [], [CloneProperty(name: "ttl", value: "5")], [CloneProperty(name: "x", value: "1"), CloneProperty(name: "y", value: "two words")],
        // Lines of the agent's own names given by the writer are replaced, as `set` replaces them.
        [CloneProperty(name: "wseq", value: "forged:1"), CloneProperty(name: "ack", value: "someone"), CloneProperty(name: "z", value: "3")],
    ]

    /// The record's properties once the agent's lines are set on the writer's.
    static func expected(
        _ properties: CloneProperties, agentID: String, confirms: Bool, writer: String?, count: UInt64
    ) -> CloneProperties {
        var expected = properties
        if confirms { expected.set(CloneProperties.ackName, agentID) }
        expected.set(CloneProperties.writeSequenceName, "\(agentID):\(count)")
        if let writer { expected.set(CloneProperties.writerGenerationName, writer) }
        return expected
    }

    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func framesAreThoseOfTheRecordWithItsLinesSet(confirms: Bool, generation: Bool) throws {
        let agentID = "00ab12cd34ef5678"
        let confirmation = confirms ? (name: CloneProperties.ackName, value: agentID) : nil
        let writer = generation ? "coord-app/0:3" : nil
        let own = CloneAgent.OwnLines(agentID: agentID, confirmation: confirmation, generation: writer)
        let uuid = UUID()
        for properties in Self.propertyCases {
            for count: UInt64 in [0, 1, 9, 10, 1234, .max] {
                let expected = Self.expected(properties, agentID: agentID, confirms: confirms, writer: writer, count: count)
                let record = CloneRecord(key: "/s/abc/nav", uuid: uuid, properties: expected, value: Array("value".utf8))
                let write = PreparedWrite(
                    key: "/s/abc/nav", uuid: uuid, leading: CloneAgent.KVSetLines.leading(properties, own: own),
                    value: Array("value".utf8), count: count)
                #expect(CloneAgent.KVSetLines.frames(write, own: own) == CloneMessage.kvset(record).frames, "\(properties.map(\.name)) count \(count)")
            }
        }
    }

    /// What a real agent sends its collector, read by a raw SUB socket bound where the server's
    /// collector would be: every frame, with a key longer than a small string and one that is
    /// not, values of every size class, properties (one frame longer than the agent's first
    /// buffer for it), a ttl, and the count of each write.
    @Test(arguments: [(false, false), (true, true)])
    func theAgentSendsTheRecordWithItsLinesSet(confirms: Bool, generation: Bool) async throws {
        let context = try ZMQContext()
        let endpoints = try CloneEndpoints(base: ipcBase())
        let collector = try ZMQSocket(context: context, type: .sub, linger: .zero)
        try collector.subscribe("")
        try collector.setReceiveTimeout(.seconds(10))
        try collector.bind(endpoints.collector)
        var configuration = CloneAgentConfiguration(subtrees: ["/none/"])
        configuration.confirmWrites = confirms
        configuration.confirmAfter = .seconds(60)
        if generation { configuration.generation = (writer: "coord-app/0", number: 3) }
        let agent = try CloneAgent(context: context, endpoints: endpoints, configuration: configuration, logger: testLogger)
        defer { agent.stop() }
        let writes: [(key: String, value: [UInt8], ttl: Duration?, properties: CloneProperties)] = [
            ("/k", Array("short".utf8), nil, []),
            ("/s/0b6f1c3e-54a2-4c71-9d0e-1f2a3b4c5d6e/v/details", [UInt8](repeating: 7, count: 300), nil, Self.propertyCases[2]),
            ("/s/0b6f1c3e-54a2-4c71-9d0e-1f2a3b4c5d6e/nav", [], nil, Self.propertyCases[3]),
            ("/ttl/key", Array("expiring".utf8), .seconds(5), []),
            // Longer than the agent's first buffer for the properties frame, which grows.
            ("/long", Array("long lines".utf8), nil, [CloneProperty(name: "note", value: String(repeating: "n", count: 400))]),
            ("/big", [UInt8](repeating: 1, count: 70_000), nil, Self.propertyCases[1]),
        ]
        var uuids: [UUID] = []
        for write in writes {
            uuids.append(try agent.set(key: write.key, value: write.value, ttl: write.ttl, properties: write.properties))
        }
        uuids += try agent.set(keys: ["/pair/v", "/pair/s"], value: Array("both".utf8))
        let agentID = try #require(Self.agentID(of: agent))
        let sent = writes.map { ($0.key, $0.value, $0.ttl.map { _ in [CloneProperty(name: "ttl", value: "5")] } ?? $0.properties) }
            + [("/pair/v", Array("both".utf8), []), ("/pair/s", Array("both".utf8), [])]
        for (index, (key, value, properties)) in sent.enumerated() {
            let received = try #require(try collector.receiveMessage(), "write \(index + 1) never arrived")
            let expected = Self.expected(
                properties, agentID: agentID, confirms: confirms, writer: generation ? "coord-app/0:3" : nil, count: UInt64(index + 1))
            let record = CloneRecord(key: key, uuid: uuids[index], properties: expected, value: value)
            #expect(received == CloneMessage.kvset(record).frames, "write \(index + 1), \(key)")
        }
    }

    /// The agent's id, as its writes name it in `wseq`.
    static func agentID(of agent: CloneAgent) -> String? {
        agent.writeIDs.agentID
    }
}

extension CloneAgent.KVSetLines {
    /// The five frames of a KVSET numbered `count`, made as the agent's thread makes them: its
    /// properties frame through `write(into:)`, every other frame from the write's parts.
    static func frames(_ write: PreparedWrite, own: CloneAgent.OwnLines) -> [Frame] {
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
        defer { buffer.deallocate() }
        let length = Self.write(into: &buffer, leading: write.leading, own: own, count: write.count)
        return [Array(write.key.utf8), zeroSequence, write.uuid.frame, Array(buffer[..<length]), write.value]
    }
}
