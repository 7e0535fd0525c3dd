import FlowbusTesting
import Foundation
import Testing

/// A run across machines: `flowbus sim PLAN --agents 2` coordinates on the host's machine over
/// sim.control and /sim/<run>/; two `flowbus sim-agent`s join over tcp with CURVE, each plays
/// half the users on the real movies app, and the coordinator merges their histograms into one
/// report. Once on loopback, once across three network namespaces (the host in one, an agent in
/// each of the others, linked by veth pairs), as three machines would be.
@Suite("Sim agents end to end", .serialized)
struct SimAgentsEndToEndTests {
    /// Sign in to the demo account once, then browse: agents are clients of a closed host, which
    /// may not call svc.* (the sign-up setup reads svc.mail's outbox).
    static let signIn = """
        - open: {}
        - expect: {screen: signin}
        - send: {action: logIn, fields: {email: demo@flowbus.dev, password: flowbus123}}
        - expect: {screen: home, phase: success, timeout: 30}
        """
    static let browse = """
        - send: {action: select, fields: {item: "actor:1"}}
        - expect: {screen: details, phase: success}
        - send: {action: selectTab, fields: {tab: likes}}
        - expect: {screen: likes, phase: success}
        - send: {action: selectTab, fields: {tab: home}}
        - expect: {screen: details}
        - send: {action: back}
        - expect: {screen: home}
        """
    static let plan = """
        name: agents-test
        seed: 5
        setup: signin.yaml
        journeys:
          - {script: browse.yaml, weight: 1}
        think: {uniform: [20ms, 80ms]}
        users: 4
        duration: 6s
        thresholds:
          - errors < 1%
          - failed < 1%
          - journeys >= 8
        """

    /// Where a party runs: this machine's own namespace, or a named one.
    struct Place {
        var namespace: String?
    }

    static func flowbus(_ arguments: [String], in place: Place) async throws -> FlowbusProcesses.Outcome {
        let executable = try #require(FlowbusProcesses.flowbusExecutable())
        guard let namespace = place.namespace else { return try await FlowbusProcesses.run(executable, arguments) }
        let ip = try #require(FlowbusProcesses.executable(named: "ip"))
        return try await FlowbusProcesses.run(ip, ["netns", "exec", namespace, executable.path] + arguments)
    }

    /// Writes the plan, its journeys and three key pairs (host, two agents) into a new folder.
    static func prepare() async throws -> String {
        let folder = TestScratch.directory("fbsa")
        try plan.write(toFile: folder + "/plan.yaml", atomically: true, encoding: .utf8)
        try signIn.write(toFile: folder + "/signin.yaml", atomically: true, encoding: .utf8)
        try browse.write(toFile: folder + "/browse.yaml", atomically: true, encoding: .utf8)
        for name in ["host", "agent1", "agent2"] {
            let made = try await flowbus(["keys", "--out", "\(folder)/\(name)"], in: Place())
            try #require(made.status == 0, "\(made.output)")
        }
        let allowed = try ["agent1", "agent2"].map { try String(contentsOfFile: "\(folder)/\($0).pub", encoding: .utf8) }
        try allowed.joined(separator: "\n").write(toFile: folder + "/allow.txt", atomically: true, encoding: .utf8)
        return folder
    }

    /// Starts the host (CURVE on `listen`), runs the coordinator and the two agents, stops the
    /// host, and checks the merged report.
    static func runAcross(
        folder: String, listen: String, port: Int, host: Place, agents: [(place: Place, address: String)]
    ) async throws {
        let runDirectory = folder + "/run"
        let up = try await flowbus(
            ["up", "--detach", "--run-dir", runDirectory, "--broker", "tcp://\(listen):\(port)", "--clone", "tcp://\(listen):\(port + 1)",
             "--curve-secret", folder + "/host.key", "--allow", folder + "/allow.txt"], in: host)
        try #require(up.status == 0, "\(up.output)")
        do {
            try await coordinate(folder: folder, runDirectory: runDirectory, port: port, host: host, agents: agents)
        } catch {
            _ = try? await flowbus(["down", "--run-dir", runDirectory], in: host)
            throw error
        }
        let down = try await flowbus(["down", "--run-dir", runDirectory], in: host)
        #expect(down.status == 0, "\(down.output)")
    }

    static func coordinate(folder: String, runDirectory: String, port: Int, host: Place, agents: [(place: Place, address: String)]) async throws {
        let report = folder + "/report"
        let coordinator = Task {
            try await flowbus(["sim", folder + "/plan.yaml", "--agents", "2", "--agent-timeout", "90", "--run-dir", runDirectory, "--report", report], in: host)
        }
        var players: [Task<FlowbusProcesses.Outcome, any Error>] = []
        for (index, agent) in agents.enumerated() {
            players.append(Task {
                try await flowbus(
                    ["sim-agent", "--broker", "tcp://\(agent.address):\(port)", "--clone", "tcp://\(agent.address):\(port + 1)",
                     "--server-key", folder + "/host.pub", "--key", "\(folder)/agent\(index + 1).key", "--name", "agent\(index + 1)",
                     "--join-timeout", "90"], in: agent.place)
            })
        }
        let coordinated = try await coordinator.value
        var outputs: [String] = []
        for player in players { outputs.append(try await player.value.output) }
        let everything = "coordinator:\n\(coordinated.output)\nagents:\n\(outputs.joined(separator: "\n---\n"))"
        #expect(coordinated.status == 0, "\(everything)")
        for output in outputs { #expect(output.contains("report sent to the coordinator"), "\(everything)") }

        let data = try #require(FileManager.default.contents(atPath: report + "/report.json"), "\(everything)")
        let figures = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let shares = try #require(figures["agents"] as? [[String: Any]], "\(figures.keys)")
        #expect(shares.count == 2)
        #expect(Set(shares.compactMap { $0["name"] as? String }) == ["agent1", "agent2"])
        // Users 0 and 2 play on one agent, 1 and 3 on the other.
        #expect(shares.allSatisfy { $0["usersStarted"] as? Int == 2 }, "\(shares)")
        #expect(figures["usersStarted"] as? Int == 4)
        // Merged, not averaged: the whole run's counts are the agents' sums, and each intent's
        // histogram holds every intent either agent sent.
        let metrics = figures["metrics"] as? [[String: Any]] ?? []
        let intents = metrics.filter { $0["family"] as? String == "intent" }.reduce(0) { $0 + ($1["count"] as? Int ?? 0) }
        #expect(intents > 0 && intents == shares.reduce(0) { $0 + ($1["intents"] as? Int ?? 0) }, "\(metrics.map { $0["name"] ?? "" })")
        let completed = figures["journeysCompleted"] as? Int ?? 0
        #expect(completed >= 8 && completed == shares.reduce(0) { $0 + ($1["journeysCompleted"] as? Int ?? 0) })
        #expect(figures["journeysFailed"] as? Int == 0 && figures["failedRequests"] as? Int == 0, "\(everything)")
        let html = try String(contentsOfFile: report + "/report.html", encoding: .utf8)
        #expect(html.contains("agent1") && html.contains("agent2"), "the report names the agents")
    }

    @Test("two agents join over tcp with CURVE, play half the users each, and their histograms merge into one report",
          .timeLimit(.minutes(3)))
    func twoAgentsOnLoopback() async throws {
        let folder = try await Self.prepare()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Below Linux's ephemeral range, where outgoing connections take their local ports.
        let port = Int.random(in: 20_000..<32_000)
        try await Self.runAcross(
            folder: folder, listen: "127.0.0.1", port: port, host: Place(), agents: [(Place(), "127.0.0.1"), (Place(), "127.0.0.1")])
    }

    /// Whether this machine lets us make network namespaces (root, iproute2, the capability).
    static var namespacesWork: Bool {
        guard geteuid() == 0, let ip = FlowbusProcesses.executable(named: "ip") else { return false }
        let name = "fbprobe\(getpid())"
        let add = Process()
        add.executableURL = ip
        add.arguments = ["netns", "add", name]
        guard (try? add.run()) != nil else { return false }
        add.waitUntilExit()
        guard add.terminationStatus == 0 else { return false }
        let delete = Process()
        delete.executableURL = ip
        delete.arguments = ["netns", "delete", name]
        try? delete.run()
        delete.waitUntilExit()
        return true
    }

    @Test("across three network namespaces linked by veth, with CURVE: the host in one, an agent in each of the others",
          .enabled(if: namespacesWork, "needs root and `ip netns` (Debian's iproute2); scripts/setup installs it"), .timeLimit(.minutes(3)))
    func twoAgentsInOtherNamespaces() async throws {
        let folder = try await Self.prepare()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let tag = String(UUID().uuidString.prefix(4)).lowercased()
        let host = "fbh-\(tag)"
        let ip = try #require(FlowbusProcesses.executable(named: "ip"))
        @Sendable func net(_ arguments: [String]) async throws {
            let outcome = try await FlowbusProcesses.run(ip, arguments)
            try #require(outcome.status == 0, "ip \(arguments.joined(separator: " ")): \(outcome.output)")
        }
        var namespaces = [host]
        defer {
            for namespace in namespaces {
                let delete = Process()
                delete.executableURL = ip
                delete.arguments = ["netns", "delete", namespace]
                try? delete.run()
                delete.waitUntilExit()
            }
        }
        try await net(["netns", "add", host])
        try await net(["-n", host, "link", "set", "lo", "up"])
        var agents: [(place: Place, address: String)] = []
        for index in 1...2 {
            // A veth pair per agent: 10.231.N.1 on the host's side, 10.231.N.2 on the agent's.
            let agent = "fba\(index)-\(tag)"
            namespaces.append(agent)
            try await net(["netns", "add", agent])
            try await net(["-n", agent, "link", "set", "lo", "up"])
            let hostSide = "fvh\(index)\(tag)", agentSide = "fva\(index)\(tag)"
            try await net(["link", "add", hostSide, "type", "veth", "peer", "name", agentSide])
            try await net(["link", "set", hostSide, "netns", host])
            try await net(["link", "set", agentSide, "netns", agent])
            try await net(["-n", host, "addr", "add", "10.231.\(index).1/24", "dev", hostSide])
            try await net(["-n", agent, "addr", "add", "10.231.\(index).2/24", "dev", agentSide])
            try await net(["-n", host, "link", "set", hostSide, "up"])
            try await net(["-n", agent, "link", "set", agentSide, "up"])
            agents.append((Place(namespace: agent), "10.231.\(index).1"))
        }
        // The host listens on every address of its namespace: beyond loopback, so CURVE is required.
        try await Self.runAcross(folder: folder, listen: "0.0.0.0", port: 25_555, host: Place(namespace: host), agents: agents)
    }
}
