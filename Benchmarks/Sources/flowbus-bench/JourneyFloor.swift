import CRawZMQ
import Foundation
import Glibc

/// Issue 16's raw baseline for the whole journey: app-journey's six intents after logIn, played by
/// the app's processes over raw libzmq, each hop and each Clone write of the app passed as the
/// app passes it, in the same order and waiting for what the app waits for, and nothing else
/// done. What the app's journey takes above it is Flowbus's and the app's work; this floor is
/// what the layout (a process per coordinator and per view model, APP.md's chains of calls) and
/// its messages cost on this machine before any of that work.
///
/// The script is what `Benchmarks/scripts/journey-hops` and `flowbus tap` show of one journey of
/// the movies app (2026-12-02): every call, reply and write on the way to each milestone, and
/// the side chains that run beside it (a coordinator's record, the replies, the finishing of
/// Main's children at logOut). A coordinator writes its instance record when it applies a call,
/// and every reply waits for the sender's writes to be confirmed, as FlowKit's do.
///
/// Each process runs one thread (a DEALER to the broker, a DEALER to the Clone collector, a SUB):
/// on a message it looks up its reactions to the message's tag (the body's first two bytes) and
/// carries them out in order. The host is like-floor's (a ROUTER broker and a Clone server that
/// publishes each write and confirms each drain). The client, in this process, sends each intent
/// and waits for its milestone (a publication with the milestone's tag on its session's
/// subscription) and for its reply, as app-journey's client does. With one thread per process
/// and no hand-offs it is a lower bound on the app's layout, whose processes hand work between
/// threads (like-floor's app layout takes about a tenth longer than its one thread a process
/// in most runs).
struct JourneyFloor {
    typealias Tag = UInt16

    enum Action: Sendable {
        /// `[to, body]` to the broker; the body `size` bytes, starting with `tag`.
        case send(to: String, tag: Tag, size: Int)
        /// A Clone write `[key, sequence, uuid, properties, body]`; the body as in `send`.
        case write(key: String, tag: Tag, size: Int)
        /// Waits until the Clone server confirmed every write this process made.
        case awaitConfirmations
    }

    /// One intent of the journey.
    struct Intent: Sendable {
        var label: String
        var target: String
        var start: Tag
        /// The publication that shows the intent's milestone to the client.
        var milestone: Tag
        /// The intent's reply to the client.
        var reply: Tag
    }

    /// The reactions of every process, by tag, and the intents in journey order.
    struct Script: Sendable {
        var reactions: [Tag: [String: [Action]]] = [:]
        var intents: [Intent] = []
        var subscriptions: [String: [String]] = [:]
        private var last: Tag = 0

        mutating func tag() -> Tag {
            last += 1
            return last
        }

        mutating func on(_ tag: Tag, _ actor: String, _ actions: [Action]) {
            reactions[tag, default: [:]][actor, default: []] += actions
        }

        var actions: [Action] { reactions.values.flatMap(\.values).flatMap { $0 } }

        /// Clone writes a journey makes.
        var writes: Int { actions.filter { if case .write = $0 { true } else { false } }.count }

        /// Messages a journey passes through the broker: the scripted ones and the client's intents.
        var sends: Int { actions.filter { if case .send = $0 { true } else { false } }.count + intents.count }

        /// Every process but the client and the host.
        var actors: [String] {
            Set(reactions.values.flatMap(\.keys)).subtracting([JourneyFloor.client]).sorted()
        }
    }

    static let partyFlag = "--journey-floor-party"
    static let client = "client", services = "services"
    static let session = "floor0001"
    static let intentSize = 160, callSize = 200, serviceReplySize = 600, stateSize = 700, navigationSize = 700, replySize = 120
    /// The body of a `ping`, which every process answers with the same tag: the client's check
    /// that all of them are connected before the first journey.
    static let ping: Tag = .max

    static func record(_ coordinator: String) -> String { "/c/\(coordinator)/\(session)" }
    static let navigation = "/s/\(session)/nav", sessionRecord = "/s/\(session)/meta"

    /// A screen's state, written as a view model writes it: under its own key and its session's.
    static func state(_ screen: String, tag: Tag) -> [Action] {
        [.write(key: "/v/\(screen)/\(session)", tag: tag, size: stateSize), .write(key: "/s/\(session)/vm/\(screen)", tag: tag, size: stateSize)]
    }

    /// A view model loading its screen: `loading`, the service calls one after the other,
    /// `success` (tagged `shown`), then, its writes confirmed, `replyTag` to `replyTo`. Returns
    /// the actions that start it and the tag of its `loading`.
    static func load(_ script: inout Script, screen: String, calls: Int, shown: Tag, replyTo: String, replyTag: Tag) -> (start: [Action], loading: Tag) {
        let vm = "vm-\(screen)"
        let loading = script.tag()
        var call = script.tag()
        let start = state(screen, tag: loading) + [.send(to: services, tag: call, size: callSize)]
        for index in 0..<calls {
            let answered = script.tag()
            script.on(call, services, [.send(to: vm, tag: answered, size: serviceReplySize)])
            if index + 1 < calls {
                call = script.tag()
                script.on(answered, vm, [.send(to: services, tag: call, size: callSize)])
            } else {
                script.on(answered, vm, state(screen, tag: shown) + [.awaitConfirmations, .send(to: replyTo, tag: replyTag, size: replySize)])
            }
        }
        return (start, loading)
    }

    /// The six intents of app-journey after logIn, as the movies app plays them.
    static func journey() -> Script {
        var script = Script()
        script.subscriptions = [
            client: ["/s/\(session)/"], "coord-app": ["/s/"], "coord-settings": ["/v/settings/"],
            "vm-details": ["/v/details/"], "vm-likes": ["/v/likes/"], "vm-settings": ["/v/settings/"],
        ]
        // select on Home, then on Details: Home's coordinator records the selection and asks App to
        // navigate; App writes the navigation, sends `appear` to Details and answers; Home answers
        // the intent; Details loads from svc.movies and answers App's `appear`.
        for label in ["select actor:1 → Details success", "select movie:19 → Details success"] {
            let intent = script.tag(), navigate = script.tag(), navigated = script.tag(), appear = script.tag()
            let appeared = script.tag(), shown = script.tag(), reply = script.tag(), written = script.tag()
            script.on(intent, "coord-home", [.write(key: record("home"), tag: 0, size: 40), .send(to: "coord-app", tag: navigate, size: callSize)])
            script.on(navigate, "coord-app", [
                .write(key: navigation, tag: written, size: navigationSize), .send(to: "vm-details", tag: appear, size: callSize),
                .awaitConfirmations, .send(to: "coord-home", tag: navigated, size: replySize),
            ])
            script.on(navigated, "coord-home", [.awaitConfirmations, .send(to: client, tag: reply, size: replySize)])
            let details = load(&script, screen: "details", calls: 1, shown: shown, replyTo: "coord-app", replyTag: appeared)
            script.on(appear, "vm-details", details.start)
            script.intents.append(Intent(label: label, target: "coord-home", start: intent, milestone: shown, reply: reply))
        }
        // like: Details writes `loading`, calls svc.movies, writes `success` and answers.
        do {
            let intent = script.tag(), shown = script.tag(), reply = script.tag()
            let details = load(&script, screen: "details", calls: 1, shown: shown, replyTo: client, replyTag: reply)
            script.on(intent, "vm-details", details.start)
            script.intents.append(Intent(label: "like → Details success", target: "vm-details", start: intent, milestone: shown, reply: reply))
        }
        // selectTab likes, then settings: App writes the navigation, sends `appear` and answers;
        // the screen loads (Settings with two calls in turn, its coordinator recording each state
        // it sees) and answers App's `appear`.
        for (screen, calls) in [("likes", 1), ("settings", 2)] {
            let intent = script.tag(), appear = script.tag(), appeared = script.tag(), shown = script.tag(), reply = script.tag()
            let written = script.tag()
            script.on(intent, "coord-app", [
                .write(key: navigation, tag: written, size: navigationSize), .send(to: "vm-\(screen)", tag: appear, size: callSize),
                .awaitConfirmations, .send(to: client, tag: reply, size: replySize),
            ])
            let loaded = load(&script, screen: screen, calls: calls, shown: shown, replyTo: "coord-app", replyTag: appeared)
            script.on(appear, "vm-\(screen)", loaded.start)
            if screen == "settings" {
                script.on(loaded.loading, "coord-settings", [.write(key: record("settings"), tag: 0, size: 74)])
                script.on(shown, "coord-settings", [.write(key: record("settings"), tag: 0, size: 74)])
            }
            script.intents.append(Intent(label: "selectTab \(screen) → \(screen.capitalized) success", target: "coord-app",
                                         start: intent, milestone: shown, reply: reply))
        }
        // logOut, APP.md's chain: Settings signs out with svc.users and answers; its coordinator
        // sees the `success` and calls Main's userDidLogOut, Main calls App's; App records the Auth
        // flow and calls Main's finish; Main answers, then finishes Home, Settings and Expenses
        // one after the other; App calls Auth's start, Auth asks App to navigate, and App writes
        // the navigation with SignIn on top: the milestone.
        do {
            let intent = script.tag(), settled = script.tag(), reply = script.tag()
            let mainLogOut = script.tag(), mainAnswered = script.tag(), appLogOut = script.tag(), appAnswered = script.tag()
            let finish = script.tag(), finished = script.tag(), start = script.tag(), started = script.tag()
            let navigate = script.tag(), navigated = script.tag(), signedOut = script.tag()
            let settings = load(&script, screen: "settings", calls: 1, shown: settled, replyTo: client, replyTag: reply)
            script.on(intent, "vm-settings", settings.start)
            script.on(settings.loading, "coord-settings", [.write(key: record("settings"), tag: 0, size: 74)])
            script.on(settled, "coord-settings", [
                .write(key: record("settings"), tag: 0, size: 331), .send(to: "coord-main", tag: mainLogOut, size: callSize),
            ])
            script.on(mainLogOut, "coord-main", [
                .write(key: record("main"), tag: 0, size: 305), .send(to: "coord-app", tag: appLogOut, size: callSize),
                .awaitConfirmations, .send(to: "coord-settings", tag: mainAnswered, size: replySize),
            ])
            script.on(mainAnswered, "coord-settings", [.write(key: record("settings"), tag: 0, size: 74)])
            script.on(appLogOut, "coord-app", [
                .write(key: record("app"), tag: 0, size: 604), .write(key: sessionRecord, tag: 0, size: 200),
                .send(to: "coord-main", tag: finish, size: callSize),
            ])
            // Main answers `finish`, then finishes its children one after the other.
            var childFinished: [(String, Tag, Tag)] = []
            for child in ["home", "settings", "expenses"] {
                let call = script.tag(), done = script.tag()
                childFinished.append((child, call, done))
            }
            script.on(finish, "coord-main", [
                .write(key: record("main"), tag: 0, size: 368), .awaitConfirmations, .send(to: "coord-app", tag: finished, size: replySize),
                .send(to: "coord-home", tag: childFinished[0].1, size: callSize),
            ])
            for (index, (child, call, done)) in childFinished.enumerated() {
                script.on(call, "coord-\(child)", [.write(key: record(child), tag: 0, size: 2), .awaitConfirmations, .send(to: "coord-main", tag: done, size: replySize)])
                if index + 1 < childFinished.count {
                    script.on(done, "coord-main", [.send(to: "coord-\(childFinished[index + 1].0)", tag: childFinished[index + 1].1, size: callSize)])
                } else {
                    script.on(done, "coord-main", [.write(key: record("main"), tag: 0, size: 988)])
                }
            }
            script.on(finished, "coord-app", [
                .write(key: record("app"), tag: 0, size: 665), .send(to: "coord-auth", tag: start, size: callSize),
                .awaitConfirmations, .send(to: "coord-main", tag: appAnswered, size: replySize),
            ])
            script.on(start, "coord-auth", [
                .write(key: record("auth"), tag: 0, size: 518), .send(to: "coord-app", tag: navigate, size: callSize),
                .awaitConfirmations, .send(to: "coord-app", tag: started, size: replySize),
            ])
            script.on(navigate, "coord-app", [
                .write(key: record("app"), tag: 0, size: 181), .write(key: navigation, tag: signedOut, size: navigationSize),
                .awaitConfirmations, .send(to: "coord-auth", tag: navigated, size: replySize),
            ])
            script.intents.append(Intent(label: "logOut → SignIn shown, signed out", target: "vm-settings", start: intent, milestone: signedOut, reply: reply))
        }
        return script
    }
}

// MARK: Running it

extension JourneyFloor {
    struct Result: Sendable {
        /// The six intents, each from sending it until both its milestone and its reply arrived.
        var journey: LatencySummary
        /// Per intent label: sending it until its milestone reached the client.
        var milestones: [String: LatencySummary]
        /// CPU per journey, µs, all processes (the client's whole process included).
        var cpuPerJourney: Double
        /// Times a thread was scheduled in per journey, all processes.
        var wakeUpsPerJourney: Double
        /// CPU per journey by process (its threads summed, libzmq's included), µs, largest first.
        var processes: [(name: String, cpu: Double)]
        /// Messages through the broker and Clone writes per journey, as the script has them.
        var hops: (sends: Int, writes: Int)
        var journeys: Int
    }

    struct Options: Sendable {
        var warmup: Int
        var journeys: Int

        init(quick: Bool) {
            (warmup, journeys) = quick ? (10, 100) : (30, 500)
        }
    }

    /// Plays the journeys, its parties started fresh and stopped after.
    static func run(_ options: Options) throws(BenchError) -> Result {
        let script = journey()
        let scratch = try ScratchDirectory()
        let parties = FloorParties(name: "journey-floor")
        for role in ["host"] + script.actors {
            try parties.start(role, arguments: [partyFlag, role, scratch.path])
            if role == "host" { try LikeFloor.waitForSockets(in: scratch.path) }
        }
        let cpu = parties.cpu
        let pids = parties.pids
        let actors = script.actors
        let player = Party<(journeys: [UInt64], milestones: [String: [UInt64]], cpu: Double, runs: Double, processes: [(name: String, cpu: Double)])>("journey-floor") { () throws(BenchError) in
            let peer = try Peer(role: client, script: script, directory: scratch.path)
            try peer.waitForEveryone(actors)
            var journeys: [UInt64] = []
            var milestones: [String: [UInt64]] = [:]
            var start = cpu.sample()
            var threadsAtStart = LikeFloor.threads(of: pids)
            var firstMark: UInt64 = 0
            for index in 0..<(options.warmup + options.journeys) {
                if index == options.warmup {
                    usleep(50_000)
                    firstMark = try peer.mark()
                    (start, threadsAtStart) = (cpu.sample(), LikeFloor.threads(of: pids))
                }
                let began = monotonicNanoseconds()
                var times: [(String, UInt64)] = []
                for intent in script.intents {
                    let sent = monotonicNanoseconds()
                    let shown = try peer.play(intent, timeoutMilliseconds: 5000)
                    guard let shown else {
                        throw BenchError("journey-floor: journey \(index + 1), \(intent.label): no milestone and reply within 5 s; see the parties' errors above")
                    }
                    times.append((intent.label, shown - sent))
                }
                if index >= options.warmup {
                    journeys.append(monotonicNanoseconds() - began)
                    for (label, time) in times { milestones[label, default: []].append(time) }
                }
            }
            let end = cpu.sample()
            let threads = LikeFloor.perLike(threadsAtStart, LikeFloor.threads(of: pids), likes: options.journeys)
            // The Clone server numbers every write: between two marks of the client's own, the
            // journeys must have made exactly the script's writes, or a reaction went missing.
            usleep(50_000)
            let writes = try peer.mark() - firstMark - 1
            guard writes == UInt64(options.journeys * script.writes) else {
                throw BenchError("journey-floor: \(options.journeys) journeys made \(writes) Clone writes, not \(script.writes) each as the script has them: a party missed a message")
            }
            let total = zip(start, end).compactMap { pair in pair.0.flatMap { before in pair.1.map { $0 - before } } }.reduce(0, +)
            var processes: [String: Double] = [:]
            for thread in threads {
                let process = thread.thread.split(separator: "/").first.map(String.init) ?? thread.thread
                processes[process == "flowbus-bench" ? client : process, default: 0] += thread.cpu
            }
            return (journeys, milestones, total / 1000 / Double(options.journeys), threads.map(\.runs).reduce(0, +),
                    processes.map { ($0.key, $0.value) }.sorted { $0.cpu > $1.cpu })
        }
        let played = try player.join()
        parties.stop()
        return Result(
            journey: LatencySummary(nanoseconds: played.journeys), milestones: played.milestones.mapValues { LatencySummary(nanoseconds: $0) },
            cpuPerJourney: played.cpu, wakeUpsPerJourney: played.runs, processes: played.processes, hops: (script.sends, script.writes), journeys: options.journeys)
    }

    /// `flowbus-bench --journey-floor-party ROLE DIR`: runs one party until killed.
    static func runParty(_ arguments: [String]) -> Never {
        guard arguments.count == 2 else {
            FileHandle.standardError.write(Data("flowbus-bench: \(partyFlag) takes ROLE DIR\n".utf8))
            exit(64)
        }
        CRawZMQ_dieWithParent()
        if getppid() == 1 { exit(0) }
        CRawZMQ_nameThread(arguments[0])
        do throws(BenchError) {
            let context = RawContext()
            if arguments[0] == "host" {
                let clone = Party<Void>("jf-clone") { () throws(BenchError) in try LikeFloor.cloneServer(context, arguments[1]) }
                try LikeFloor.broker(context, arguments[1])
                try clone.join()
            } else {
                let peer = try Peer(role: arguments[0], script: journey(), directory: arguments[1], context: context)
                try peer.serve()
            }
        } catch {
            FileHandle.standardError.write(Data("flowbus-bench journey-floor \(arguments[0]): \(error)\n".utf8))
            exit(1)
        }
        exit(0)
    }

    /// One process of the journey on one thread: its sockets, its reactions, its count of writes.
    final class Peer {
        let role: String
        let broker: RawSocket
        let collector: RawSocket
        let subscriber: RawSocket?
        let reactions: [Tag: [Action]]
        let message = ReceivedMessage()
        /// One body's bytes, its first two rewritten for each message.
        var body = [UInt8](repeating: 0x42, count: 1024)
        let uuid = [UInt8](repeating: 0x55, count: 16)
        var written: UInt64 = 0
        var confirmed: UInt64 = 0

        init(role: String, script: Script, directory: String, context: RawContext = RawContext()) throws(BenchError) {
            self.role = role
            broker = try RawSocket.dealer(context, identity: role, connectingTo: "ipc://\(directory)/broker.ipc")
            collector = try RawSocket.dealer(context, identity: role, connectingTo: "ipc://\(directory)/collector.ipc")
            let prefixes = script.subscriptions[role] ?? []
            if prefixes.isEmpty {
                subscriber = nil
            } else {
                let socket = try RawSocket(context, ZMQ_SUB)
                for prefix in prefixes { socket.subscribe(prefix) }
                try socket.connect("ipc://\(directory)/publisher.ipc")
                subscriber = socket
            }
            reactions = script.reactions.compactMapValues { $0[role] }
        }

        /// The tag at the start of frame `index`'s body, or nil when it is shorter than a tag.
        func tag(_ index: Int) -> Tag? {
            guard zmq_msg_size(&message.frames[index]) >= 2 else { return nil }
            return Tag(bigEndian: zmq_msg_data(&message.frames[index])!.loadUnaligned(as: Tag.self))
        }

        func sendBody(_ tag: Tag, size: Int, on socket: RawSocket) throws(BenchError) {
            withUnsafeBytes(of: tag.bigEndian) { bytes in body[0] = bytes[0]; body[1] = bytes[1] }
            let code = body.withUnsafeBytes { RawSocket.send(socket.handle, $0.baseAddress, min(size, $0.count), 0) }
            if code != 0 { throw RawSocket.error("zmq_send", code) }
        }

        func perform(_ actions: [Action]) throws(BenchError) {
            for action in actions {
                switch action {
                case .send(let to, let tag, let size):
                    try broker.send(Array(to.utf8), flags: ZMQ_SNDMORE)
                    try sendBody(tag, size: size, on: broker)
                case .write(let key, let tag, let size):
                    try collector.sendWriteHead(key: key, uuid: uuid)
                    try sendBody(tag, size: size, on: collector)
                    written += 1
                case .awaitConfirmations:
                    while confirmed < written { try takeConfirmations(flags: 0) }
                }
            }
        }

        /// Reads the Clone server's confirmations (`[count]`) waiting on the collector socket.
        func takeConfirmations(flags: Int32) throws(BenchError) {
            var flags = flags
            while let count = try collector.receiveMessage(into: &message.frames, flags: flags) {
                flags = ZMQ_DONTWAIT
                if let newest = message.acknowledgement(frames: count) { confirmed = max(confirmed, newest) }
            }
        }

        /// Reacts to every message until the process is killed.
        func serve() throws(BenchError) {
            while true {
                var items = [
                    zmq_pollitem_t(socket: broker.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
                    zmq_pollitem_t(socket: collector.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
                    zmq_pollitem_t(socket: subscriber?.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
                ]
                guard zmq_poll(&items, subscriber == nil ? 2 : 3, -1) >= 0 else { continue }
                if items[0].revents & Int16(ZMQ_POLLIN) != 0 {
                    // [from, body]
                    while let count = try broker.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                        guard count == 2, let tag = tag(1) else { continue }
                        if tag == ping {
                            let from = message.bytes(0)
                            try broker.send(from, flags: ZMQ_SNDMORE)
                            try sendBody(ping, size: 2, on: broker)
                        } else if let actions = reactions[tag] {
                            try perform(actions)
                        }
                    }
                }
                if items[1].revents & Int16(ZMQ_POLLIN) != 0 { try takeConfirmations(flags: ZMQ_DONTWAIT) }
                if let subscriber, items[2].revents & Int16(ZMQ_POLLIN) != 0 {
                    // [key, sequence, uuid, properties, body]
                    while let count = try subscriber.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                        if count == 5, let tag = tag(4), let actions = reactions[tag] { try perform(actions) }
                    }
                }
            }
        }

        /// The client's check that every process is connected to the broker (each answers a
        /// ping) and that the subscriptions reached the Clone server (a write of its own comes back).
        func waitForEveryone(_ actors: [String]) throws(BenchError) {
            let deadline = monotonicNanoseconds() + 20_000_000_000
            broker.set(ZMQ_RCVTIMEO, 1000)
            defer { broker.set(ZMQ_RCVTIMEO, -1) }
            for actor in actors {
                var answered = false
                while !answered {
                    guard monotonicNanoseconds() < deadline else { throw BenchError("journey-floor: \(actor) did not answer within 20 s; see its errors above") }
                    try broker.send(Array(actor.utf8), flags: ZMQ_SNDMORE)
                    try sendBody(ping, size: 2, on: broker)
                    if let count = try broker.receiveMessage(into: &message.frames), count == 2, tag(1) == ping {
                        answered = true
                    } else {
                        usleep(20_000)
                    }
                }
            }
            // Each process's subscription is as old as its answer; give them a moment to reach the server.
            usleep(200_000)
        }

        /// Writes a mark under the client's session and returns the sequence the Clone server
        /// gave it, once it comes back on the client's subscription.
        func mark() throws(BenchError) -> UInt64 {
            guard let subscriber else { throw BenchError("journey-floor: the client has no subscription") }
            try perform([.write(key: "/s/\(JourneyFloor.session)/mark", tag: ping, size: 2)])
            let deadline = monotonicNanoseconds() + 5_000_000_000
            while monotonicNanoseconds() < deadline {
                var items = [zmq_pollitem_t(socket: subscriber.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)]
                guard zmq_poll(&items, 1, 100) > 0 else { continue }
                while let count = try subscriber.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                    if count == 5, tag(4) == ping, zmq_msg_size(&message.frames[1]) == 8 {
                        return UInt64(bigEndian: zmq_msg_data(&message.frames[1])!.loadUnaligned(as: UInt64.self))
                    }
                }
            }
            throw BenchError("journey-floor: the client's mark did not come back from the Clone server within 5 s")
        }

        /// Sends `intent` and waits for its milestone and its reply; the milestone's time, or nil
        /// when both did not come within the timeout.
        func play(_ intent: Intent, timeoutMilliseconds: Int) throws(BenchError) -> UInt64? {
            guard let subscriber else { throw BenchError("journey-floor: the client has no subscription") }
            try broker.send(Array(intent.target.utf8), flags: ZMQ_SNDMORE)
            try sendBody(intent.start, size: JourneyFloor.intentSize, on: broker)
            var shown: UInt64?
            var replied = false
            let deadline = monotonicNanoseconds() + UInt64(timeoutMilliseconds) * 1_000_000
            while shown == nil || !replied {
                let now = monotonicNanoseconds()
                if now >= deadline { return nil }
                var items = [
                    zmq_pollitem_t(socket: broker.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
                    zmq_pollitem_t(socket: subscriber.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
                ]
                if zmq_poll(&items, 2, Int((deadline - now) / 1_000_000) + 1) < 0 {
                    if zmq_errno() == EINTR { continue }
                    throw RawSocket.error("zmq_poll")
                }
                if items[1].revents & Int16(ZMQ_POLLIN) != 0 {
                    while let count = try subscriber.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                        if count == 5, tag(4) == intent.milestone { shown = monotonicNanoseconds() }
                    }
                }
                if items[0].revents & Int16(ZMQ_POLLIN) != 0 {
                    while let count = try broker.receiveMessage(into: &message.frames, flags: ZMQ_DONTWAIT) {
                        if message.isBounce(frames: count) { throw BenchError("journey-floor: the broker found no \(intent.target) for \(intent.label)") }
                        if count == 2, tag(1) == intent.reply { replied = true }
                    }
                }
            }
            return shown
        }
    }
}
