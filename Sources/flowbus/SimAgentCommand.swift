import ArgumentParser
import Clone
import FlowClient
import FlowHost
import FlowSim
import Foundation
import Logging
import ZeroMQ

struct SimAgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim-agent",
        abstract: "Joins a run of `flowbus sim PLAN --agents N` from another machine and plays its share of the simulated users.",
        discussion: """
            The coordinator serves sim.control on the host's bus; this agent joins it, reads the \
            plan and the start instant from Clone (/sim/<run>/), plays users index, index+N, \
            index+2N… from that instant, reports progress once a second, and sends its histograms \
            when done (the coordinator merges them exactly and writes the one report). From another \
            machine the host listens on tcp with CURVE: `flowbus sim-agent --broker tcp://HOST:5555 \
            --clone tcp://HOST:5556 --server-key host.pub --key agent.key`, where agent.pub is on the \
            host's --allow list (`flowbus keys --out agent` makes the pair). As a client of a closed \
            host an agent may call vm.* and coord.* only: a plan whose journeys call svc.* services \
            must run on the host's machine. Without --broker it joins the host of --run-dir.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "The host's broker, e.g. tcp://10.0.0.1:5555 (default: the host of --run-dir).")
    var broker: String?

    @Option(name: .long, help: "The host's Clone base endpoint, e.g. tcp://10.0.0.1:5556 (its three ports start there).")
    var clone: String?

    @Option(name: .customLong("server-key"), help: "The host's CURVE public key file (its --curve-secret's .pub).")
    var serverKey: String?

    @Option(name: .long, help: "This agent's CURVE secret key file (from `flowbus keys --out NAME`; its .pub on the host's --allow list).")
    var key: String?

    @Option(name: .long, help: "This agent's name in the coordinator's report (default: the host name).")
    var name: String?

    @Option(name: .long, help: "Requests in flight at once: threads of the shared request pool.")
    var lanes: Int = 32

    @Option(name: .customLong("join-timeout"), help: "Seconds to keep asking to join while no coordinator answers.")
    var joinTimeout: Double = 60

    func validate() throws {
        guard (broker == nil) == (clone == nil) else { throw ValidationError("give --broker and --clone together (the host's two endpoints), or neither to join the host of --run-dir") }
        guard (serverKey == nil) == (key == nil) else { throw ValidationError("CURVE needs both --server-key (the host's .pub) and --key (this agent's secret key file)") }
        if serverKey != nil, broker == nil { throw ValidationError("--server-key and --key are for a host on another machine: give its --broker and --clone too") }
        guard (1...1024).contains(lanes) else { throw ValidationError("--lanes must be between 1 and 1024") }
        guard joinTimeout > 0 else { throw ValidationError("--join-timeout must be more than 0 seconds") }
    }

    func endpoints() throws -> BusEndpoints {
        guard let broker, let clone else { return try BusEndpoints.announced(by: global.runDirectory) }
        var endpoints = BusEndpoints(broker: broker, clone: try CloneEndpoints(base: clone))
        if let serverKey, let key {
            endpoints.serverPublicKey = try KeyFiles.readPublic(path: serverKey).z85
            endpoints.clientKeyPair = try KeyFiles.readSecret(path: key)
        }
        return endpoints
    }

    func run() async throws {
        global.bootstrapLogging(quiet: .warning)
        let endpoints: BusEndpoints
        do {
            endpoints = try self.endpoints()
        } catch {
            FileHandle.standardError.write(Data("flowbus sim-agent: \(error)\n".utf8))
            throw ExitCode(1)
        }
        var options = SimAgent.Options(endpoints: endpoints)
        if let name { options.name = name }
        options.lanes = lanes
        options.joinTimeout = .milliseconds(Int64(joinTimeout * 1000))
        do {
            let agent = try SimAgent(options: options)
            defer { agent.stop() }
            print("flowbus sim-agent \(options.name): joining the run on \(endpoints.broker)")
            let joined = try await agent.join { print("flowbus sim-agent: \($0)") }
            print("joined run \(joined.run) as agent \(joined.index) of \(joined.of); waiting for the start")
            let (plan, start) = try await agent.readRun(joined)
            let wait = max(0, (start - .now) / .seconds(1))
            print(String(format: "plan %@ (seed %llu): starting in %.1f s, users %d, %d, %d… of %@", plan.name, plan.seed, wait,
                         joined.index, joined.index + joined.of, joined.index + 2 * joined.of, plan.load.isOpen ? "the arrivals" : "\(Int(plan.load.peak))"))
            let progress = ProgressLine(terminal: isatty(STDOUT_FILENO) == 1)
            let result = try await agent.play(plan, joined: joined, start: start) { runner, elapsed in progress.show(runner, elapsed: elapsed) }
            progress.end()
            print(String(format: "this agent's share: %d journeys completed, %d failed, %d timed out; %d requests, %d failed; report sent to the coordinator",
                         result.journeysCompleted, result.journeysFailed, result.journeysTimedOut, result.requests, result.failedRequests))
        } catch {
            FileHandle.standardError.write(Data("flowbus sim-agent: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
