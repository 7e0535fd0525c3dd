import MessagePath
import Testing

/// Who may serve, write, call and read on a closed bus (`Protocols/README.md`, "Who may do what").
@Suite("Bus access rules")
struct BusAccessRulesTests {
    let access = BusAccess()

    @Test func onlyPluginsAndTheHostServeTheAppButTheHostsUserMayServeASimulation() {
        for peer in [PeerClass.plugin, .host] {
            #expect(access.mayServe(Array("vm.home".utf8), as: peer) && access.mayServe(Array("sim.control".utf8), as: peer))
            #expect(access.mayWrite(Array("/s/abc/nav".utf8), as: peer))
        }
        #expect(access.mayServe(Array("sim.control".utf8), as: .operator))
        #expect(!access.mayServe(Array("vm.home".utf8), as: .operator))
        #expect(!access.mayServe(Array("svc.users".utf8), as: .operator))
        #expect(access.mayWrite(Array("/sim/r1/plan".utf8), as: .operator))
        #expect(!access.mayWrite(Array("/s/abc/nav".utf8), as: .operator))
        #expect(!access.mayWrite(Array("/simulated".utf8), as: .operator), "a prefix of the subtree's name is not the subtree")
        #expect(!access.mayServe(Array("sim.control".utf8), as: .client))
        #expect(!access.mayWrite(Array("/sim/r1/plan".utf8), as: .client))
    }

    @Test func aClientJoinsASimulationButReachesNoAppService() {
        #expect(access.mayCall(Array("sim.control".utf8), as: .client))
        #expect(access.mayRead(Array("/sim/r1/".utf8), as: .client))
        #expect(!access.mayCall(Array("svc.mail".utf8), as: .client))
        #expect(!access.mayRead(Array("/s/".utf8), as: .client))
        #expect(!access.mayRead(Array("/c/".utf8), as: .client))
    }
}
