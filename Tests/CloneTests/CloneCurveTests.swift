import Clone
import Foundation
import Testing
import ZeroMQ

@Suite("Clone over CURVE")
struct CloneCurveTests {
    @Test func anAllowedAgentSyncsAndWritesAndAStrangerGetsNothing() async throws {
        let context = try ZMQContext()
        let serverKeys = try CurveKeyPair.generate()
        let friend = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let authenticator = ZAPAuthenticator(context: context, allowedClientKeys: [friend.publicKey])
        try authenticator.start()
        defer { authenticator.stop() }

        var configuration = CloneServerConfiguration()
        configuration.hugzInterval = .milliseconds(100)
        configuration.curveSecretKey = serverKeys.secretKey
        configuration.zapDomain = "flowbus"
        let endpoints = try CloneEndpoints(base: ipcBase())
        let server = try CloneServer.start(context: context, configuration: configuration, endpoints: endpoints, logger: testLogger)
        defer { server.stop() }

        func agent(_ keys: CurveKeyPair) throws -> CloneAgent {
            var agentConfiguration = CloneAgentConfiguration(subtrees: ["/secure/"])
            agentConfiguration.curve = (serverKeys.publicKey, keys)
            return try CloneAgent(context: context, endpoints: endpoints, configuration: agentConfiguration, logger: testLogger)
        }
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
