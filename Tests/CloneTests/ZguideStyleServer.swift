import Clone
import Dispatch
import Foundation
import Synchronization
import Testing
import ZeroMQ

/// A clone server that puts on the wire what the zguide's reference servers put there (clonesrv5
/// and clonesrv6 with kvmsg, in C and in Python), built from reading what they send, so the
/// agent can be tested against it: a ROUTER for snapshots and a PUB for updates, no collector
/// (these tests only read). Its sockets live on its own thread; tests send it commands.
///
/// - C kvmsg: KVSYNC carries the stored record's UUID and properties in frames 2–3; KTHXBAI's
///   subtree frame is empty (`kvmsg_set_body (kvmsg, subtree, 0)`); clonesrv6's HUGZ carries the
///   current sequence and empty frames 2–4.
/// - Python kvmsg: every message carries a new 16-byte UUID in frame 2, KTHXBAI and HUGZ too.
/// - clonesrv5 sends no HUGZ at all; clonesrv6 sends one every second (here: on command or every
///   `hugzEvery`), never one in answer to a subscription as a Flowbus server does.
final class ZguideStyleServer: Sendable {
    enum Dialect: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case c, python
        var testDescription: String { rawValue }
    }

    enum Command: Sendable {
        /// An update arrived: stored under the next sequence and published.
        case publish(key: String, value: String)
        /// Stored under the next sequence and published before the agent's subscription reached
        /// the server: the agent never receives it.
        case publishedBeforeSubscription(key: String, value: String)
        /// One HUGZ now, with the current sequence.
        case hugz
        /// These frames, as they are, on the publisher (bad input for the agent).
        case raw([Frame])
    }

    let endpoints: CloneEndpoints
    let dialect: Dialect
    let snapshotsServed = Atomic<Int>(0)
    private let commands = Mutex<[Command]>([])
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(context: ZMQContext, dialect: Dialect, hugzEvery: Duration? = nil, seed: [(key: String, value: String)]) throws {
        endpoints = try CloneEndpoints(base: ipcBase())
        self.dialect = dialect
        let started = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        let thread = Thread { [self, endpoints] in
            defer { finished.signal() }
            let loop: ServerLoop
            do {
                loop = try ServerLoop(context: context, endpoints: endpoints, dialect: dialect, hugzEvery: hugzEvery, seed: seed)
            } catch {
                failure.withLock { $0 = error }
                started.signal()
                return
            }
            started.signal()
            loop.run(server: self)
        }
        thread.name = "zguide-style-clone-server"
        thread.start()
        started.wait()
        if let error = failure.withLock({ $0 }) {
            finished.wait()
            throw error
        }
    }

    func send(_ command: Command) {
        commands.withLock { $0.append(command) }
    }

    /// Closes its sockets (the agent sees its connection drop) and ends the thread.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
    }

    fileprivate var isStopping: Bool { stopping.load(ordering: .acquiring) }

    fileprivate func takeCommands() -> [Command] {
        commands.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
    }
}

/// The server's sockets and map; on the server thread only.
private final class ServerLoop {
    struct Stored {
        var sequence: UInt64
        var uuid: [UInt8]
        var properties: [UInt8]
        var value: [UInt8]
    }

    let dialect: ZguideStyleServer.Dialect
    let hugzEvery: Duration?
    let snapshot: ZMQSocket
    let publisher: ZMQSocket
    var store: [String: Stored] = [:]
    var sequence: UInt64 = 0

    init(
        context: ZMQContext, endpoints: CloneEndpoints, dialect: ZguideStyleServer.Dialect, hugzEvery: Duration?,
        seed: [(key: String, value: String)]
    ) throws {
        self.dialect = dialect
        self.hugzEvery = hugzEvery
        snapshot = try ZMQSocket(context: context, type: .router, linger: .zero)
        publisher = try ZMQSocket(context: context, type: .pub, linger: .zero)
        try snapshot.bind(endpoints.snapshot)
        try publisher.bind(endpoints.publisher)
        for (key, value) in seed { _ = storeNext(key: key, value: value) }
    }

    func run(server: ZguideStyleServer) {
        let poller = ZMQPoller()
        poller.add(snapshot)
        var nextHugz = hugzEvery.map { ContinuousClock.now + $0 }
        while !server.isStopping {
            _ = try? poller.poll(timeout: .milliseconds(5))
            while let request = try? snapshot.receiveMessage(dontWait: true) {
                serveSnapshot(request)
                server.snapshotsServed.add(1, ordering: .relaxed)
            }
            for command in server.takeCommands() {
                switch command {
                case .publish(let key, let value):
                    let stored = storeNext(key: key, value: value)
                    // Published as the writer sent it; clonesrv5 rewrites ttl to a deadline only in its map.
                    _ = try? publisher.send([Array(key.utf8), frame(stored.sequence), stored.uuid, Array("ttl=30\n".utf8), stored.value])
                case .publishedBeforeSubscription(let key, let value):
                    _ = storeNext(key: key, value: value)
                case .hugz:
                    sendHugz()
                case .raw(let frames):
                    _ = try? publisher.send(frames)
                }
            }
            if let due = nextHugz, let every = hugzEvery, ContinuousClock.now >= due {
                sendHugz()
                nextHugz = due + every
            }
        }
    }

    func storeNext(key: String, value: String) -> Stored {
        sequence += 1
        let deadline = dialect == .c ? "ttl=\(1_700_000_030_000 + sequence)\n" : "ttl=1700000030.\(sequence)\n"
        let stored = Stored(sequence: sequence, uuid: newUUID(), properties: Array(deadline.utf8), value: Array(value.utf8))
        store[key] = stored
        return stored
    }

    /// ICANHAZ? → the records under the subtree, each as stored (UUID and properties included), then KTHXBAI.
    func serveSnapshot(_ request: [Frame]) {
        guard request.count == 3, request[1] == Array("ICANHAZ?".utf8) else { return }
        let identity = request[0]
        let subtree = request[2]
        for (key, stored) in store.sorted(by: { $0.key < $1.key }) where key.utf8.starts(with: subtree) {
            _ = try? snapshot.send([identity, Array(key.utf8), frame(stored.sequence), stored.uuid, stored.properties, stored.value])
        }
        let end: [Frame] = switch dialect {
        case .c: [identity, Array("KTHXBAI".utf8), frame(sequence), [], [], []]
        case .python: [identity, Array("KTHXBAI".utf8), frame(sequence), newUUID(), [], subtree]
        }
        _ = try? snapshot.send(end)
    }

    func sendHugz() {
        _ = try? publisher.send([Array("HUGZ".utf8), frame(sequence), dialect == .python ? newUUID() : [], [], []])
    }

    func frame(_ sequence: UInt64) -> Frame {
        withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
    }

    func newUUID() -> [UInt8] {
        withUnsafeBytes(of: UUID().uuid) { Array($0) }
    }
}
