import Clone
import FlowbusTesting
import Foundation
import Logging
import MessagePath
import ZeroMQ

/// A fresh ipc:// base under its own short temporary folder, so parallel tests never collide.
func ipcBase() -> String {
    let folder = TestScratch.directory("fbc")
    return "ipc://\(folder)/c"
}

let testLogger: Logger = {
    var logger = Logger(label: "flowbus.clone.tests")
    logger.logLevel = .critical
    return logger
}()

/// A Clone server over CURVE (ZAP domain `flowbus`), and agents that reach it with keys of
/// their own. The test keeps the ZAP handler that admits or refuses them.
struct CurveCloneBus {
    let context: ZMQContext
    let serverKeys: CurveKeyPair
    let endpoints: CloneEndpoints
    let server: CloneServerHandle

    init(
        context: ZMQContext, faults: FaultRules = FaultRules(), configure: (inout CloneServerConfiguration) -> Void = { _ in }
    ) throws {
        self.context = context
        serverKeys = try CurveKeyPair.generate()
        var configuration = CloneServerConfiguration()
        configuration.hugzInterval = .milliseconds(100)
        configuration.curveSecretKey = serverKeys.secretKey
        configuration.zapDomain = "flowbus"
        configure(&configuration)
        endpoints = try CloneEndpoints(base: ipcBase())
        server = try CloneServer.start(context: context, configuration: configuration, endpoints: endpoints, faults: faults, logger: testLogger)
    }

    func agent(_ keys: CurveKeyPair, subtrees: [String]) throws -> CloneAgent {
        var configuration = CloneAgentConfiguration(subtrees: subtrees)
        configuration.curve = (serverKeys.publicKey, keys)
        return try CloneAgent(context: context, endpoints: endpoints, configuration: configuration, logger: testLogger)
    }
}

/// One server and the agents of a test, stopped together.
final class CloneFixture {
    let context: ZMQContext
    let endpoints: CloneEndpoints
    var server: CloneServerHandle?
    let faults = FaultRules()
    var agents: [CloneAgent] = []
    var serverConfiguration: CloneServerConfiguration

    init(hugz: Duration = .milliseconds(100), configure: (inout CloneServerConfiguration) -> Void = { _ in }) throws {
        context = try ZMQContext()
        endpoints = try CloneEndpoints(base: ipcBase())
        serverConfiguration = CloneServerConfiguration()
        serverConfiguration.hugzInterval = hugz
        serverConfiguration.statisticsInterval = .milliseconds(5)
        configure(&serverConfiguration)
        try startServer()
    }

    func startServer() throws {
        server = try CloneServer.start(
            context: context, configuration: serverConfiguration, endpoints: endpoints, faults: faults, logger: testLogger)
    }

    func agent(
        _ subtrees: [String] = [""], timeout: Duration = .seconds(1),
        configure: (inout CloneAgentConfiguration) -> Void = { _ in }
    ) throws -> CloneAgent {
        var configuration = CloneAgentConfiguration(subtrees: subtrees)
        configuration.serverTimeout = timeout
        configuration.statisticsInterval = .milliseconds(5)
        configure(&configuration)
        let agent = try CloneAgent(context: context, endpoints: endpoints, configuration: configuration, logger: testLogger)
        agents.append(agent)
        return agent
    }

    /// An agent already holding its snapshot.
    func syncedAgent(_ subtrees: [String] = [""], configure: (inout CloneAgentConfiguration) -> Void = { _ in }) async throws -> CloneAgent {
        let agent = try agent(subtrees, configure: configure)
        guard await agent.waitUntilSynced(timeout: .seconds(10)) else { throw FixtureError.notSynced }
        return agent
    }

    deinit {
        for agent in agents { agent.stop() }
        server?.stop()
    }
}

enum FixtureError: Error { case notSynced, timedOut(String) }

/// Waits until `condition` holds, checking every few milliseconds; false after `timeout`.
func eventually(timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try await condition()
}

extension CloneAgent {
    /// The map as text, for comparisons.
    func textMap(prefix: String = "") -> [String: String] {
        Dictionary(uniqueKeysWithValues: entries(prefix: prefix).map { ($0.key, $0.text) })
    }

    func text(_ key: String) -> String? { get(key)?.text }
}

extension CloneServerHandle {
    func textMap(prefix: String = "") async -> [String: String] {
        Dictionary(uniqueKeysWithValues: await entries(prefix: prefix).map { ($0.key, $0.text) })
    }
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}
