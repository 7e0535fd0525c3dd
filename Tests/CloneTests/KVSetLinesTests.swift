@testable import Clone
import Foundation
import Testing

/// A KVSET's frames as `CloneAgent.set` makes them (the properties' bytes ready before the
/// queue's lock, the count filled in under it) are those of the record with its lines set.
@Suite("KVSET lines")
struct KVSetLinesTests {
    static let propertyCases: [CloneProperties] = [
        [], [CloneProperty(name: "ttl", value: "5")], [CloneProperty(name: "x", value: "1"), CloneProperty(name: "y", value: "two words")],
        // Lines of the agent's own names given by the writer are replaced, as `set` replaces them.
        [CloneProperty(name: "wseq", value: "forged:1"), CloneProperty(name: "ack", value: "someone"), CloneProperty(name: "z", value: "3")],
    ]

    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func framesAreThoseOfTheRecordWithItsLinesSet(confirms: Bool, generation: Bool) throws {
        let agentID = "00ab12cd34ef5678"
        let confirmation = confirms ? (name: CloneProperties.ackName, value: agentID) : nil
        let writer = generation ? "coord-app/0:3" : nil
        let own = CloneAgent.OwnLines(agentID: agentID, confirmation: confirmation, generation: writer)
        let uuid = UUID()
        for properties in Self.propertyCases {
            for count: UInt64 in [0, 1, 9, 10, 1234, .max] {
                var expected = properties
                if let confirmation { expected.set(confirmation.name, confirmation.value) }
                expected.set(CloneProperties.writeSequenceName, "\(agentID):\(count)")
                if let writer { expected.set(CloneProperties.writerGenerationName, writer) }
                let record = CloneRecord(key: "/s/abc/nav", uuid: uuid, properties: expected, value: Array("value".utf8))
                let made = CloneAgent.KVSetLines(properties, own: own)
                    .frames(key: Array("/s/abc/nav".utf8), uuid: uuid.frame, value: Array("value".utf8), count: count)
                #expect(made == CloneMessage.kvset(record).frames, "\(properties.map(\.name)) count \(count)")
            }
        }
    }
}
