import Clone
import Foundation
import Testing
import ZeroMQ

@Suite("Clone over CURVE")
struct CloneCurveTests {
    @Test func anAllowedAgentSyncsAndWritesAndAStrangerGetsNothing() async throws {
        let context = try ZMQContext()
        let friend = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let authenticator = ZAPAuthenticator(context: context, allowedClientKeys: [friend.publicKey])
        try authenticator.start()
        defer { authenticator.stop() }
        let bus = try CurveCloneBus(context: context)
        let server = bus.server
        defer { server.stop() }
        func agent(_ keys: CurveKeyPair) throws -> CloneAgent { try bus.agent(keys, subtrees: ["/secure/"]) }
        let allowed = try agent(friend)
        defer { allowed.stop() }
        let refused = try agent(stranger)
        defer { refused.stop() }

        #expect(await allowed.waitUntilSynced(timeout: .seconds(10)))
        try allowed.set(key: "/secure/k", value: "v".bytes)
        try refused.set(key: "/secure/intruder", value: "x".bytes)
        #expect(await eventually { allowed.text("/secure/k") == "v" })
        #expect(await server.textMap() == ["/secure/k": "v"])
        #expect(!refused.isSynced)
        #expect(refused.entries().isEmpty)
        #expect(authenticator.decisions.denied >= 1)
    }
}
