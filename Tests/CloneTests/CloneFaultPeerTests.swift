import Clone
import Foundation
import MessagePath
import Testing
import ZeroMQ

/// A key fault rule aimed at one plugin (`peer`) sees the writer's User-Id through a real Clone
/// server on a closed bus: the server reads it from the message only when a rule is set, and a
/// rule must still tell the writers apart.
@Suite("Clone faults aimed at one writer")
struct CloneFaultPeerTests {
    @Test func aRuleAimedAtOnePluginDropsOnlyThatPluginsWrites() async throws {
        let context = try ZMQContext()
        let home = try CurveKeyPair.generate()
        let app = try CurveKeyPair.generate()
        let names = [home.publicKey: "plugin:coord-home/0", app.publicKey: "plugin:coord-app/0"]
        let authenticator = ZAPAuthenticator(context: context) { request in
            guard let key = request.curveKey, let name = names[key] else { return .deny(reason: "not one of the test's plugins") }
            return .admit(userID: name)
        }
        try authenticator.start()
        defer { authenticator.stop() }
        let faults = FaultRules()
        try faults.install(FaultRule(id: "cut-home", scope: .key, prefix: "/demo/", action: .drop, peer: "plugin:coord-home"))
        // Closed: the server reads each message's User-Id, which the rule is aimed by.
        let bus = try CurveCloneBus(context: context, faults: faults) { $0.access = BusAccess() }
        let server = bus.server
        defer { server.stop() }
        func agent(_ keys: CurveKeyPair) throws -> CloneAgent { try bus.agent(keys, subtrees: ["/demo/"]) }
        let homeAgent = try agent(home)
        defer { homeAgent.stop() }
        let appAgent = try agent(app)
        defer { appAgent.stop() }
        #expect(await homeAgent.waitUntilSynced(timeout: .seconds(10)))
        #expect(await appAgent.waitUntilSynced(timeout: .seconds(10)))

        for round in 0..<5 {
            try homeAgent.set(key: "/demo/home/\(round)", value: "h".bytes)
            try appAgent.set(key: "/demo/app/\(round)", value: "a".bytes)
        }
        #expect(await eventually { await server.textMap(prefix: "/demo/app/").count == 5 })
        #expect(await eventually { server.statistics.faultDropped >= 5 })
        // The other plugin's writes went past the rule; this one's never reached the map.
        #expect(await server.textMap(prefix: "/demo/home/").isEmpty)
        #expect(homeAgent.text("/demo/app/0") == "a")
        #expect(homeAgent.text("/demo/home/0") == nil)
    }
}
