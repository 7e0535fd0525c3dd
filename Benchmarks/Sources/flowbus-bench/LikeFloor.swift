import CRawZMQ
import Foundation
import Glibc
import Supervision
import Synchronization

/// Issue 16's raw baseline for an app step: a like played by the processes and threads the app
/// uses for it, passing the same messages over raw libzmq and doing nothing else. What is left
/// of the app's like above this floor is Flowbus's and the app's work; what is below it no code
/// of ours can win back without another layout.
///
/// The processes, as in the app (each started as `flowbus-bench --like-floor-party ROLE DIR LAYOUT`):
/// - **host**: a broker thread (one ROUTER; a message `[to, body…]` from a peer goes on to `to`
///   as `[from, body…]`) and a Clone server thread (a ROUTER collecting five-frame writes, a PUB
///   publishing them with a sequence, an acknowledgement to the writer after each drain), sharing
///   one libzmq I/O thread like Flowbus's host;
/// - **vm**: the Details view model. Layout `app`: the worker thread receives the intent and
///   hands it to a lane thread; the lane writes `loading` (two keys, `/v/` and `/s/`) through an
///   agent thread, calls the service on a socket of its own, writes `success` the same way,
///   waits for the agent to see both writes acknowledged, and hands the answer back to the worker
///   thread, which sends it; the agent also follows its screen's keys. Layout `single`: one thread
///   does all of it, with no hand-offs and no following;
/// - **svc**: the movies service, answering on the thread that received;
/// - **owner**: the navigation owner, following every session's keys;
/// - the client, in this process: a thread sends the like and times it until the `success`
///   state reaches it (as app-journey times "like → Details success"), then waits for the reply
///   before the next like. Layout `app`: the session's states come through an agent thread, as
///   SessionClient's do; layout `single`: the sending thread subscribes itself.
///
/// Sizes are the app's: intent 160 bytes, service call 200, its reply 600, each state 700, the
/// intent's reply 120.
struct LikeFloor {
    enum Layout: String, CaseIterable, Sendable {
        case app, single
    }

    struct Result: Sendable {
        var layout: Layout
        var latency: LatencySummary
        /// CPU per like, µs, all processes (the client's whole process included).
        var cpuPerLike: Double
        /// Times a thread was scheduled in per like, all processes: about one a wake-up.
        var wakeUpsPerLike: Double
        /// Per like, by "process/thread": µs of CPU and wake-ups, largest first.
        var threads: [(thread: String, cpu: Double, runs: Double)]
        var likes: Int
    }

    static let partyFlag = "--like-floor-party"
    static let intentSize = 160, callSize = 200, serviceReplySize = 600, stateSize = 700, replySize = 120
    static let session = "floor0001"

    let quick: Bool
    var warmup: Int { quick ? 100 : 300 }
    var likes: Int { quick ? 500 : 3000 }

    /// Plays the likes with `layout`, its parties started fresh and stopped after. `pinned`: each
    /// party on one CPU as `flowbus up --placement pinned` places the app's processes on the
    /// like's way (the host, the view model and the navigation owner on one CPU, the services on
    /// the next; the client, this process, where the kernel puts it).
    func run(_ layout: Layout, pinned: Bool = false) throws(BenchError) -> Result {
        let scratch = try ScratchDirectory()
        let parties = FloorParties(name: "like-floor")
        let cpus = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let offsets = ["host": 0, "svc": 1, "owner": 0, "vm": 0]
        for role in ["host", "svc", "owner", "vm"] {
            try parties.start(role, arguments: [Self.partyFlag, role, scratch.path, layout.rawValue],
                              cpu: pinned ? (offsets[role] ?? 0) % cpus : nil)
            // The host binds; the others connect once it has.
            if role == "host" { try Self.waitForSockets(in: scratch.path) }
        }
        let cpu = parties.cpu
        let pids = parties.pids
        let (warmup, likes) = (warmup, likes)
        let client = Party<(samples: [UInt64], cpu: Double, threads: [(thread: String, cpu: Double, runs: Double)])>("floor-client") { () throws(BenchError) in
            let context = RawContext()
            let dealer = try RawSocket.dealer(context, identity: "client", connectingTo: "ipc://\(scratch.path)/broker.ipc")
            // The app's client follows its session on an agent thread, which hands each state to
            // the thread waiting for it; in the `single` layout one thread does both.
            let states: StateSource
            let stopAgent = StopFlag()
            var agent: Party<Void>?
            var relay: [Int32] = []
            if layout == .app {
                relay = AppViewModel.pipeEnds()
                states = .relay(relay[0])
                let ends = relay
                agent = Party<Void>("floor-cl-agent") { () throws(BenchError) in
                    try Self.clientAgent(context: context, directory: scratch.path, relay: ends, until: stopAgent)
                }
            } else {
                let subscriber = try RawSocket.subscriber(context, to: "/s/\(Self.session)/", connectingTo: "ipc://\(scratch.path)/publisher.ipc")
                states = .subscriber(subscriber)
            }
            defer {
                stopAgent.raise()
                _ = try? agent?.join()
                for end in relay { close(end) }
            }
            let intent = [UInt8](repeating: 0x49, count: Self.intentSize)
            var samples: [UInt64] = []
            var start = cpu.sample()
            var threadsAtStart = Self.threads(of: pids)
            // The first likes wait for the parties to connect and the subscription to reach the server.
            var index = 0
            let readyBy = monotonicNanoseconds() + 20_000_000_000
            while index < warmup + likes {
                if index == warmup { (start, threadsAtStart) = (cpu.sample(), Self.threads(of: pids)) }
                let sent = monotonicNanoseconds()
                try dealer.send(Array("vm".utf8), flags: ZMQ_SNDMORE)
                try dealer.send(intent)
                let outcome = try Self.awaitLike(dealer: dealer, states: states, timeout: index < warmup ? 200 : 5000)
                switch outcome {
                case .done(let shown):
                    if index >= warmup { samples.append(shown - sent) }
                    index += 1
                case .bounced, .noState, .timedOut:
                    guard index < warmup, monotonicNanoseconds() < readyBy else {
                        let what = outcome == .bounced ? "found no view model" : outcome == .noState ? "showed no success state" : "had no reply"
                        throw BenchError("like-floor (\(layout.rawValue)): like \(index) \(what); see the parties' errors above")
                    }
                    if outcome == .bounced { usleep(20_000) }
                    // Warm-up: a like whose state missed a subscription still counts.
                    index += outcome == .noState ? 1 : 0
                }
            }
            let end = cpu.sample()
            let threads = Self.perLike(threadsAtStart, Self.threads(of: pids), likes: likes)
            let total = zip(start, end).compactMap { pair in pair.0.flatMap { before in pair.1.map { $0 - before } } }.reduce(0, +)
            return (samples, total / 1000 / Double(likes), threads)
        }
        let (samples, perLike, threads) = try client.join()
        parties.stop()
        return Result(
            layout: layout, latency: LatencySummary(nanoseconds: samples), cpuPerLike: perLike,
            wakeUpsPerLike: threads.map(\.runs).reduce(0, +), threads: threads, likes: likes)
    }

    /// CPU (ns) and times scheduled in (schedstat's third field, about one a wake-up) of every
    /// thread of `pids`, by "process/thread" name (threads of one name summed).
    static func threads(of pids: [Int32]) -> [String: (cpu: Double, runs: Double)] {
        var threads: [String: (cpu: Double, runs: Double)] = [:]
        for pid in pids {
            guard let tids = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { continue }
            let process = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "\(pid)"
            for tid in tids {
                guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8),
                      let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
                else { continue }
                let fields = text.split(separator: " ").map { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 }
                guard fields.count >= 3 else { continue }
                threads["\(process)/\(name)", default: (0, 0)].cpu += fields[0]
                threads["\(process)/\(name)", default: (0, 0)].runs += fields[2]
            }
        }
        return threads
    }

    /// Per like, by thread, between two `threads` readings: (name, µs of CPU, wake-ups), largest first.
    static func perLike(_ before: [String: (cpu: Double, runs: Double)], _ after: [String: (cpu: Double, runs: Double)], likes: Int)
        -> [(thread: String, cpu: Double, runs: Double)] {
        after.compactMap { name, end in
            let start = before[name] ?? (0, 0)
            return (name, (end.cpu - start.cpu) / 1000 / Double(likes), (end.runs - start.runs) / Double(likes))
        }.sorted { $0.cpu > $1.cpu }
    }

    enum Outcome: Equatable {
        /// The success state arrived (at this time) and the reply too.
        case done(UInt64)
        /// The broker found no view model yet.
        case bounced
        /// The reply came but no success state within the timeout (a subscription not there yet).
        case noState
        /// No reply within the timeout.
        case timedOut
    }

    /// Where the client's waiting thread learns of states.
    enum StateSource {
        /// Its own subscription.
        case subscriber(RawSocket)
        /// A pipe the client's agent thread writes a byte to for each `success` state.
        case relay(Int32)
    }

    /// The app layout's client agent: follows the session and tells the waiting thread of each
    /// `success` state through `relay`.
    static func clientAgent(context: RawContext, directory: String, relay: [Int32], until stop: StopFlag) throws(BenchError) {
        let subscriber = try RawSocket.subscriber(context, to: "/s/\(session)/", connectingTo: "ipc://\(directory)/publisher.ipc")
        let message = ReceivedMessage()
        while !stop.isRaised {
            var items = [zmq_pollitem_t(socket: subscriber.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)]
            guard zmq_poll(&items, 1, 100) > 0 else { continue }
            while let count = try subscriber.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                if message.isState(Phase.success, frames: count) {
                    AppViewModel.signal(relay)
                }
            }
        }
    }

    /// Waits for the like's `success` state and its reply, at most `timeout` ms.
    static func awaitLike(dealer: RawSocket, states: StateSource, timeout: Int) throws(BenchError) -> Outcome {
        var shown: UInt64?
        var replied = false
        let deadline = monotonicNanoseconds() + UInt64(timeout) * 1_000_000
        let message = ReceivedMessage()
        while shown == nil || !replied {
            let now = monotonicNanoseconds()
            if now >= deadline { return replied ? .noState : .timedOut }
            var items = [zmq_pollitem_t(socket: dealer.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)]
            switch states {
            case .subscriber(let subscriber): items.append(zmq_pollitem_t(socket: subscriber.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0))
            case .relay(let descriptor): items.append(zmq_pollitem_t(socket: nil, fd: descriptor, events: Int16(ZMQ_POLLIN), revents: 0))
            }
            let waited = zmq_poll(&items, 2, Int((deadline - now) / 1_000_000) + 1)
            if waited < 0 {
                if zmq_errno() == EINTR { continue }
                throw RawSocket.error("zmq_poll")
            }
            if items[1].revents & Int16(ZMQ_POLLIN) != 0 {
                switch states {
                case .subscriber(let subscriber):
                    // [key, sequence, uuid, properties, body]: the body's first byte is the phase.
                    while let count = try subscriber.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                        if message.isState(Phase.success, frames: count) {
                            shown = monotonicNanoseconds()
                        }
                    }
                case .relay(let descriptor):
                    var buffer = [UInt8](repeating: 0, count: 64)
                    if read(descriptor, &buffer, buffer.count) > 0 { shown = monotonicNanoseconds() }
                }
            }
            if items[0].revents & Int16(ZMQ_POLLIN) != 0 {
                while let count = try dealer.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                    // [from, body]; a bounce is ["", "!"].
                    if message.isBounce(frames: count) {
                        return .bounced
                    }
                    replied = true
                }
            }
        }
        return .done(shown!)
    }

    enum Phase {
        static let loading: UInt8 = 1
        static let success: UInt8 = 2
    }

    /// This binary's path, for the parties.
    static var executable: String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return length > 0 ? String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }

    static func waitForSockets(in directory: String) throws(BenchError) {
        let deadline = monotonicNanoseconds() + 10_000_000_000
        for name in ["broker.ipc", "collector.ipc", "publisher.ipc"] {
            while !FileManager.default.fileExists(atPath: "\(directory)/\(name)") {
                guard monotonicNanoseconds() < deadline else { throw BenchError("like-floor: its host process bound no \(name) in 10 s") }
                usleep(2_000)
            }
        }
    }
}

/// The processes of a raw floor, each this binary started with a party's arguments; killed by
/// `stop`, or when this goes, so none outlives its run (nor a run that throws).
final class FloorParties {
    let name: String
    private(set) var started: [(role: String, process: Process)] = []

    init(name: String) {
        self.name = name
    }

    deinit {
        stop()
    }

    /// The variable that pins a party to one CPU (`start`'s `cpu`).
    static let cpuVariable = "FLOWBUS_BENCH_PARTY_CPU"

    /// `cpu`: the one CPU the party and all its threads run on (nil: where the kernel puts them).
    func start(_ role: String, arguments: [String], cpu: Int? = nil) throws(BenchError) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LikeFloor.executable)
        process.arguments = arguments
        if let cpu {
            var environment = ProcessInfo.processInfo.environment
            environment[Self.cpuVariable] = "\(cpu)"
            process.environment = environment
        }
        do { try process.run() } catch { throw BenchError("\(name): cannot start its \(role) process: \(error)") }
        started.append((role, process))
    }

    /// Each party's CPU by its role, and this process's as the client's.
    var cpu: ProcessTreeCPU {
        ProcessTreeCPU(members: started.map { ProcessTreeCPU.Member(label: $0.role, pid: $0.process.processIdentifier) }
            + [ProcessTreeCPU.Member(label: "client", pid: nil)])
    }

    /// The parties' process ids and this process's.
    var pids: [Int32] { started.map { $0.process.processIdentifier } + [getpid()] }

    func stop() {
        for party in started.reversed() where party.process.isRunning {
            kill(party.process.processIdentifier, SIGKILL)
            party.process.waitUntilExit()
        }
        started = []
    }
}

// MARK: The parties

extension LikeFloor {
    /// `flowbus-bench --like-floor-party ROLE DIR LAYOUT`: runs one party until killed.
    static func runParty(_ arguments: [String]) -> Never {
        guard arguments.count == 3, let layout = Layout(rawValue: arguments[2]) else {
            FileHandle.standardError.write(Data("flowbus-bench: \(partyFlag) takes ROLE DIR LAYOUT (app or single)\n".utf8))
            exit(64)
        }
        let directory = arguments[1]
        // Killed with the benchmark, even when it is interrupted (and gone already if it was).
        CRawZMQ_dieWithParent()
        if getppid() == 1 { exit(0) }
        CRawZMQ_nameThread("floor-\(arguments[0])")
        // Pinned (FloorParties.start's `cpu`) before the context makes its I/O thread, which inherits it.
        if let text = ProcessInfo.processInfo.environment[FloorParties.cpuVariable], let cpu = Int(text), CPUPlacement.pinThisProcess(to: cpu) != nil {
            FileHandle.standardError.write(Data("flowbus-bench: the \(arguments[0]) party could not be pinned to CPU \(cpu); it runs unpinned\n".utf8))
        }
        do throws(BenchError) {
            let context = RawContext()
            switch arguments[0] {
            case "host":
                let clone = Party<Void>("floor-clone") { () throws(BenchError) in try cloneServer(context, directory) }
                try broker(context, directory)
                try clone.join()
            case "svc": try service(context, directory)
            case "owner": try owner(context, directory)
            case "vm":
                switch layout {
                case .app: try AppViewModel(context: context, directory: directory).run()
                case .single: try singleViewModel(context, directory)
                }
            default: throw BenchError("no like-floor party \(arguments[0])")
            }
        } catch {
            FileHandle.standardError.write(Data("flowbus-bench like-floor \(arguments[0]): \(error)\n".utf8))
            exit(1)
        }
        exit(0)
    }

    /// `[from, to, body…]` in, `[to, from, body…]` out; to a peer not connected, `[from, "", "!"]` back.
    static func broker(_ context: RawContext, _ directory: String) throws(BenchError) {
        let router = try RawSocket(context, ZMQ_ROUTER)
        router.set(ZMQ_ROUTER_MANDATORY, 1)
        try router.bind("ipc://\(directory)/broker.ipc")
        let message = ReceivedMessage()
        while true {
            guard let count = try router.receiveMessage(into: &message.frames), count >= 3 else { continue }
            let to = message.bytes(1)
            guard try router.sendReachable(to, flags: ZMQ_SNDMORE) else {
                let from = message.bytes(0)
                try router.send(from, flags: ZMQ_SNDMORE)
                try router.send([], flags: ZMQ_SNDMORE)
                try router.send([UInt8(ascii: "!")])
                continue
            }
            try router.forward(&message.frames[0], more: true)
            for index in 2..<count { try router.forward(&message.frames[index], more: index < count - 1) }
        }
    }

    /// Five-frame writes `[from, key, sequence, uuid, properties, body]` in; each published as
    /// `[key, sequence, uuid, properties, body]` with the server's sequence; after each drain,
    /// every writer heard from gets `[writer, count]`, the writes it has had from it so far.
    static func cloneServer(_ context: RawContext, _ directory: String) throws(BenchError) {
        let collector = try RawSocket(context, ZMQ_ROUTER)
        try collector.bind("ipc://\(directory)/collector.ipc")
        let publisher = try RawSocket(context, ZMQ_PUB)
        try publisher.bind("ipc://\(directory)/publisher.ipc")
        let message = ReceivedMessage()
        var sequence: UInt64 = 0
        var counts: [[UInt8]: UInt64] = [:]
        while true {
            var heard: Set<[UInt8]> = []
            var flags: Int32 = 0
            while let count = try collector.receiveMessage(into: &message.frames, flags: flags) {
                flags = ZMQ_DONTWAIT
                guard count == 6 else { continue }
                let writer = message.bytes(0)
                sequence += 1
                try publisher.forward(&message.frames[1], more: true)
                try publisher.send(bigEndian: sequence, flags: ZMQ_SNDMORE)
                for index in 3...5 { try publisher.forward(&message.frames[index], more: index < 5) }
                counts[writer, default: 0] += 1
                heard.insert(writer)
            }
            for writer in heard {
                try collector.send(writer, flags: ZMQ_SNDMORE)
                try collector.send(bigEndian: counts[writer]!)
            }
        }
    }

    static func service(_ context: RawContext, _ directory: String) throws(BenchError) {
        let dealer = try RawSocket.dealer(context, identity: "svc", connectingTo: "ipc://\(directory)/broker.ipc")
        let reply = [UInt8](repeating: 0x52, count: serviceReplySize)
        let message = ReceivedMessage()
        while true {
            guard let count = try dealer.receiveMessage(into: &message.frames), count == 2 else { continue }
            try dealer.forward(&message.frames[0], more: true)
            try dealer.send(reply)
        }
    }

    static func owner(_ context: RawContext, _ directory: String) throws(BenchError) {
        let subscriber = try RawSocket.subscriber(context, to: "/s/", connectingTo: "ipc://\(directory)/publisher.ipc")
        while true { _ = try subscriber.drainMessage() }
    }

    /// One state written under both of its keys, as a view model writes it.
    static func writeState(_ phase: UInt8, on collector: RawSocket) throws(BenchError) {
        var body = [UInt8](repeating: 0x53, count: stateSize)
        body[0] = phase
        let uuid = [UInt8](repeating: 0x55, count: 16)
        for key in ["/v/details/\(session)", "/s/\(session)/vm/details"] {
            try collector.sendWriteHead(key: key, uuid: uuid)
            try collector.send(body)
        }
    }

    /// The service call on `caller`, sent again after a bounce (the service not connected yet).
    static func callService(on caller: RawSocket, message: ReceivedMessage) throws(BenchError) {
        let call = [UInt8](repeating: 0x43, count: callSize)
        while true {
            try caller.send(Array("svc".utf8), flags: ZMQ_SNDMORE)
            try caller.send(call)
            guard let count = try caller.receiveMessage(into: &message.frames) else { continue }
            if message.isBounce(frames: count) {
                usleep(10_000)
                continue
            }
            return
        }
    }

    /// The `single` layout: the worker thread does it all.
    static func singleViewModel(_ context: RawContext, _ directory: String) throws(BenchError) {
        let worker = try RawSocket.dealer(context, identity: "vm", connectingTo: "ipc://\(directory)/broker.ipc")
        let caller = try RawSocket.dealer(context, identity: "vm-call", connectingTo: "ipc://\(directory)/broker.ipc")
        let collector = try RawSocket.dealer(context, identity: "vm-agent", connectingTo: "ipc://\(directory)/collector.ipc")
        let reply = [UInt8](repeating: 0x41, count: replySize)
        let message = ReceivedMessage()
        var written: UInt64 = 0
        var acknowledged: UInt64 = 0
        while true {
            guard let count = try worker.receiveMessage(into: &message.frames), count == 2 else { continue }
            let client = message.bytes(0)
            try writeState(Phase.loading, on: collector)
            try callService(on: caller, message: message)
            try writeState(Phase.success, on: collector)
            written += 4
            while acknowledged < written {
                guard let count = try collector.receiveMessage(into: &message.frames), let newest = message.acknowledgement(frames: count) else { continue }
                acknowledged = newest
            }
            try worker.send(client, flags: ZMQ_SNDMORE)
            try worker.send(reply)
        }
    }
}

/// The `app` layout of the view model: worker thread, lane thread, agent thread, handing work
/// over as Flowbus's do (a condition variable to the lane, a pipe to the agent and back to
/// the worker thread, a condition variable for the acknowledgements).
final class AppViewModel: @unchecked Sendable {
    // Unchecked: every mutable field is read and written under `lock`.
    let context: RawContext
    let directory: String
    let lock = NSCondition()
    var intents: [[UInt8]] = []
    var outbox: [UInt8] = []
    var answers: [[UInt8]] = []
    var acknowledged: UInt64 = 0
    /// Non-blocking pipes, as Flowbus's `WakeSignal`: [read end, write end].
    let agentWake = AppViewModel.pipeEnds()
    let workerWake = AppViewModel.pipeEnds()

    init(context: RawContext, directory: String) {
        self.context = context
        self.directory = directory
    }

    func run() throws(BenchError) {
        let agent = Party<Void>("floor-agent") { () throws(BenchError) in try self.agent() }
        let lane = Party<Void>("floor-lane") { () throws(BenchError) in try self.lane() }
        try worker()
        try agent.join()
        try lane.join()
    }

    static func pipeEnds() -> [Int32] {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0, "like-floor: no pipe: errno \(errno)")
        for end in ends { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
        return ends
    }

    static func signal(_ ends: [Int32]) {
        var byte: UInt8 = 1
        _ = write(ends[1], &byte, 1)
    }

    static func clear(_ ends: [Int32]) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(ends[0], &buffer, buffer.count) > 0 {}
    }

    func worker() throws(BenchError) {
        let worker = try RawSocket.dealer(context, identity: "vm", connectingTo: "ipc://\(directory)/broker.ipc")
        let reply = [UInt8](repeating: 0x41, count: LikeFloor.replySize)
        let message = ReceivedMessage()
        while true {
            var items = [
                zmq_pollitem_t(socket: worker.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
                zmq_pollitem_t(socket: nil, fd: workerWake[0], events: Int16(ZMQ_POLLIN), revents: 0),
            ]
            guard zmq_poll(&items, 2, -1) >= 0 else { continue }
            if items[0].revents & Int16(ZMQ_POLLIN) != 0 {
                while let count = try worker.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                    guard count == 2 else { continue }
                    let client = message.bytes(0)
                    lock.lock()
                    intents.append(client)
                    lock.broadcast()
                    lock.unlock()
                }
            }
            if items[1].revents & Int16(ZMQ_POLLIN) != 0 {
                Self.clear(workerWake)
                lock.lock()
                let ready = answers
                answers = []
                lock.unlock()
                for client in ready {
                    try worker.send(client, flags: ZMQ_SNDMORE)
                    try worker.send(reply)
                }
            }
        }
    }

    func lane() throws(BenchError) {
        let caller = try RawSocket.dealer(context, identity: "vm-call", connectingTo: "ipc://\(directory)/broker.ipc")
        let message = ReceivedMessage()
        var written: UInt64 = 0
        while true {
            lock.lock()
            while intents.isEmpty { lock.wait() }
            let client = intents.removeFirst()
            lock.unlock()
            queue(LikeFloor.Phase.loading)
            try LikeFloor.callService(on: caller, message: message)
            queue(LikeFloor.Phase.success)
            written += 4
            lock.lock()
            while acknowledged < written { lock.wait() }
            answers.append(client)
            lock.unlock()
            Self.signal(workerWake)
        }
    }

    /// Puts a state in the agent's outbox (its phase byte) and wakes the agent if it was empty.
    func queue(_ phase: UInt8) {
        lock.lock()
        let wasEmpty = outbox.isEmpty
        outbox.append(phase)
        lock.unlock()
        if wasEmpty { Self.signal(agentWake) }
    }

    func agent() throws(BenchError) {
        let collector = try RawSocket.dealer(context, identity: "vm-agent", connectingTo: "ipc://\(directory)/collector.ipc")
        let subscriber = try RawSocket.subscriber(context, to: "/v/details/", connectingTo: "ipc://\(directory)/publisher.ipc")
        let message = ReceivedMessage()
        while true {
            var items = [
                zmq_pollitem_t(socket: collector.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
                zmq_pollitem_t(socket: subscriber.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
                zmq_pollitem_t(socket: nil, fd: agentWake[0], events: Int16(ZMQ_POLLIN), revents: 0),
            ]
            guard zmq_poll(&items, 3, -1) >= 0 else { continue }
            if items[2].revents & Int16(ZMQ_POLLIN) != 0 {
                Self.clear(agentWake)
                lock.lock()
                let writes = outbox
                outbox = []
                lock.unlock()
                for phase in writes { try LikeFloor.writeState(phase, on: collector) }
            }
            if items[0].revents & Int16(ZMQ_POLLIN) != 0 {
                var newest: UInt64?
                while let count = try collector.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                    if let acknowledged = message.acknowledgement(frames: count) { newest = acknowledged }
                }
                if let newest {
                    lock.lock()
                    acknowledged = max(acknowledged, newest)
                    lock.broadcast()
                    lock.unlock()
                }
            }
            if items[1].revents & Int16(ZMQ_POLLIN) != 0 {
                while try subscriber.drainMessage(flags: ZMQ_DONTWAIT) > 0 {}
            }
        }
    }
}

extension RawSocket {
    /// Sets the socket's routing id (before it connects).
    func setIdentity(_ name: String) {
        let bytes = Array(name.utf8)
        bytes.withUnsafeBytes { _ = zmq_setsockopt(handle, ZMQ_ROUTING_ID, $0.baseAddress, $0.count) }
    }

    /// Receives one whole message into `frames` (initialised by the caller); its frame count, or
    /// nil on EAGAIN. Frames past the array's end are received and dropped.
    func receiveMessage(into frames: inout [zmq_msg_t], flags: Int32 = 0) throws(BenchError) -> Int? {
        guard try receive(&frames[0], flags: flags) else { return nil }
        var count = 1
        var more = zmq_msg_more(&frames[0]) != 0
        while more {
            let slot = min(count, frames.count - 1)
            _ = try receive(&frames[slot])
            more = zmq_msg_more(&frames[slot]) != 0
            count += 1
        }
        return count
    }

    /// The frames of a Clone write before its body, `[key, sequence 0, uuid, properties (none)]`,
    /// each with more to come; the caller sends the body.
    func sendWriteHead(key: String, uuid: [UInt8]) throws(BenchError) {
        try send(Array(key.utf8), flags: ZMQ_SNDMORE)
        try send(bigEndian: 0, flags: ZMQ_SNDMORE)
        try send(uuid, flags: ZMQ_SNDMORE)
        try send([], flags: ZMQ_SNDMORE)
    }

    /// Sends one frame of a ROUTER with ZMQ_ROUTER_MANDATORY: false when its peer is not connected.
    func sendReachable(_ bytes: [UInt8], flags: Int32) throws(BenchError) -> Bool {
        let code = bytes.withUnsafeBytes { Self.send(handle, $0.baseAddress, $0.count, flags) }
        if code == EHOSTUNREACH { return false }
        if code == 0 { return true }
        throw Self.error("zmq_send", code)
    }

    /// A DEALER with routing id `identity`, connected to `endpoint`.
    static func dealer(_ context: RawContext, identity: String, connectingTo endpoint: String) throws(BenchError) -> RawSocket {
        let socket = try RawSocket(context, ZMQ_DEALER)
        socket.setIdentity(identity)
        try socket.connect(endpoint)
        return socket
    }

    /// A SUB following the keys under `prefix`, connected to `endpoint`.
    static func subscriber(_ context: RawContext, to prefix: String, connectingTo endpoint: String) throws(BenchError) -> RawSocket {
        let socket = try RawSocket(context, ZMQ_SUB)
        socket.subscribe(prefix)
        try socket.connect(endpoint)
        return socket
    }
}

/// Eight frames to receive messages into, one set per thread, closed with it; and what the
/// like-floor parties read from them.
final class ReceivedMessage {
    var frames = [zmq_msg_t](repeating: zmq_msg_t(), count: 8)

    init() {
        for index in frames.indices { zmq_msg_init(&frames[index]) }
    }

    deinit {
        for index in frames.indices { zmq_msg_close(&frames[index]) }
    }

    /// A copy of frame `index`.
    func bytes(_ index: Int) -> [UInt8] {
        [UInt8](UnsafeRawBufferPointer(start: zmq_msg_data(&frames[index]), count: zmq_msg_size(&frames[index])))
    }

    /// Whether frame `index` is the one byte `byte`.
    private func isByte(_ index: Int, _ byte: UInt8) -> Bool {
        zmq_msg_size(&frames[index]) >= 1 && zmq_msg_data(&frames[index])!.load(as: UInt8.self) == byte
    }

    /// A publication `[key, sequence, uuid, properties, body]` whose body starts with `phase`.
    func isState(_ phase: UInt8, frames count: Int) -> Bool {
        count == 5 && isByte(4, phase)
    }

    /// The broker's `["", "!"]`: the peer named was not connected.
    func isBounce(frames count: Int) -> Bool {
        count == 2 && zmq_msg_size(&frames[1]) == 1 && isByte(1, UInt8(ascii: "!"))
    }

    /// The Clone server's `[count]`: the writes it has had from this writer so far.
    func acknowledgement(frames count: Int) -> UInt64? {
        guard count == 1, zmq_msg_size(&frames[0]) == 8 else { return nil }
        return UInt64(bigEndian: zmq_msg_data(&frames[0])!.loadUnaligned(as: UInt64.self))
    }
}
