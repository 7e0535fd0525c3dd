import Clone
import FlowbusTesting
import Foundation
import Logging
import Majordomo
import Testing
import ZeroMQ

/// The closed bus (the default) against a tcp peer, as the adversarial probe of issue 13 used it:
/// each abuse refused and counted, while the host's own plugins and the user's local tools work.
@Suite("Closed bus end to end", .serialized)
struct ClosedBusEndToEndTests {
    static func startHost(open: Bool, extra: [String] = []) async throws -> (HostFixture, port: Int) {
        for _ in 0..<5 {
            // Below Linux's ephemeral range, where outgoing connections could hold the Clone ports.
            let port = Int.random(in: 20_000..<32_000)
            if let host = try? await HostFixture.start(
                manifest: echoManifest([("echo", 1)]),
                arguments: ["--broker", "tcp://127.0.0.1:\(port)", "--clone", "tcp://127.0.0.1:\(port + 1)"] + (open ? ["--open"] : []) + extra) {
                return (host, port)
            }
        }
        throw HostStartFailure()
    }

    /// `clients` DEALERs connected at once, each asking `mmi.service`; how many were answered.
    static func askMMI(port: Int, clients: Int, wait: Duration) throws -> Int {
        let context = try ZMQContext()
        let sockets = try (0..<clients).map { _ in
            let socket = try ZMQSocket(context: context, type: .dealer, linger: .zero)
            try socket.connect("tcp://127.0.0.1:\(port)")
            try socket.send([[], Array("MDPC01".utf8), Array("mmi.service".utf8), Array("flowbus.echo".utf8)])
            return socket
        }
        let deadline = ContinuousClock.now + wait
        var answered = 0
        for socket in sockets {
            let poller = ZMQPoller()
            poller.add(socket)
            let left = max(.zero, deadline - .now)
            if try poller.poll(timeout: left) > 0, try socket.receiveMessage() != nil { answered += 1 }
        }
        return answered
    }

    struct HostStartFailure: Error, CustomStringConvertible {
        var description: String { "could not start a host on a free tcp port in 5 tries" }
    }

    /// Sends one message on a new socket of `type` connected to `endpoint` and returns the first
    /// message that comes back within `wait`, or nil.
    static func exchange(_ type: SocketType, _ endpoint: String, _ frames: [Frame], wait: Duration = .seconds(3)) throws -> [Frame]? {
        let context = try ZMQContext()
        let socket = try ZMQSocket(context: context, type: type, linger: .zero)
        try socket.connect(endpoint)
        try socket.send(frames)
        let poller = ZMQPoller()
        poller.add(socket)
        guard try poller.poll(timeout: wait) > 0 else { return nil }
        return try socket.receiveMessage()
    }

    static func counter(_ status: [String: Any], _ part: String, _ path: String...) -> Int {
        var object: Any? = status[part]
        for key in path { object = (object as? [String: Any])?[key] }
        return object as? Int ?? -1
    }

    @Test("a tcp peer cannot serve, call a plugin service, write, or read every session; each is refused and counted",
          .timeLimit(.minutes(1)))
    func everyAbuseIsRefusedAndCounted() async throws {
        let (host, port) = try await Self.startHost(open: false)
        defer { Task { try? await host.stop() } }
        // The echo plugin connected through the run directory's ipc endpoint and registered.
        try await BusEndToEndTests.waitForEcho(host)
        let broker = "tcp://127.0.0.1:\(port)"

        // 1. A forged worker: READY over tcp is answered with DISCONNECT.
        let ready = try await onThread {
            try Self.exchange(.dealer, broker, [[], Array("MDPW01".utf8), [0x01], Array("svc.forged".utf8)])
        }
        #expect(ready == [[], Array("MDPW01".utf8), [0x05]], "a forged READY must get DISCONNECT, got \(String(describing: ready))")

        // 2. A plugin-only service over tcp: a FORBIDDEN error that says why.
        let call = try await onThread {
            try Self.exchange(.req, broker, [Array("MDPC01".utf8), Array("flowbus.echo".utf8), Array("hi".utf8)])
        }
        let callReply = try #require(call, "a forbidden call must be answered, not dropped")
        #expect(callReply.count == 3 && callReply[1] == Array("flowbus.echo".utf8))
        let text = String(decoding: callReply.last ?? [], as: UTF8.self)
        #expect(text.contains("only the host's plugins may call flowbus.echo"), "\(text)")

        // 3. The list of every session: a KTHXBAI at sequence 0 saying why, and no KVSYNC.
        let snapshot = try await onThread {
            try Self.exchange(.dealer, "tcp://127.0.0.1:\(port + 1)", [Array("ICANHAZ?".utf8), Array("/s/".utf8)])
        }
        let refusal = try #require(snapshot)
        #expect(refusal.first == Array("KTHXBAI".utf8) && refusal[1] == [UInt8](repeating: 0, count: 8))
        #expect(String(decoding: refusal[3], as: UTF8.self).hasPrefix("refused="), "\(refusal.map { String(decoding: $0, as: UTF8.self) })")

        // 4. A forged write and 5. a subscription to every session: no answer on the wire, counted.
        let keysBefore = Self.counter(try await host.status(), "clone", "keysStored")
        try await onThread {
            let context = try ZMQContext()
            let writer = try ZMQSocket(context: context, type: .pub, linger: .milliseconds(500))
            try writer.connect("tcp://127.0.0.1:\(port + 3)")
            let subscriber = try ZMQSocket(context: context, type: .sub, linger: .zero)
            try subscriber.connect("tcp://127.0.0.1:\(port + 2)")
            try subscriber.subscribe("/s/")
            Thread.sleep(forTimeInterval: 0.3)
            try writer.send([Array("/s/victim/nav".utf8), [UInt8](repeating: 0, count: 8), [], [], Array("forged".utf8)])
            // The same in a KVSETS batch, as a Flowbus agent packs writes: each write is checked.
            let packed = KVSetBatch.packed([(Array("/s/victim/nav".utf8), [UInt8](repeating: 7, count: 16), [], Array("forged".utf8))])
            try writer.send([KVSetBatch.command, packed])
            Thread.sleep(forTimeInterval: 0.5)
        }

        let counted = await HostFixture.eventually(timeout: .seconds(5), every: .milliseconds(100)) {
            guard let status = await host.statusIfAnswered() else { return false }
            return Self.counter(status, "broker", "unauthorizedWorkers") >= 1
                && Self.counter(status, "broker", "rejections", "forbidden") >= 1
                && Self.counter(status, "clone", "writesRefused") >= 2
                && Self.counter(status, "clone", "snapshotsRefused") >= 1
                && Self.counter(status, "clone", "subscriptionsRefused") >= 1
        }
        let status = try await host.status()
        #expect(counted, "every refusal must be counted: broker \(status["broker"] ?? "-"), clone \(status["clone"] ?? "-")")
        #expect(Self.counter(status, "clone", "keysStored") == keysBefore, "the forged key must not be stored")
        #expect(Self.counter(status, "clone", "batchesReceived") >= 1, "the forged batch was not read as one: \(status["clone"] ?? "-")")
        let workers = (status["broker"] as? [String: Any])?["workersPerService"] as? [String: Int] ?? [:]
        #expect(workers["svc.forged"] == nil)
        let ps = try await host.run(["ps"])
        #expect(ps.output.contains("access   closed: refused"), "\(ps.output)")

        // The user's own tool on this machine reaches the plugin service through the ipc endpoint.
        let local = try #require((host.descriptor?["localEndpoints"] as? [String: Any])?["broker"] as? String)
        #expect(local.hasPrefix("ipc://"))
        let served = try await onThread { () -> [Frame] in
            var configuration = ClientConfiguration()
            configuration.timeout = .seconds(3)
            let client = try MajordomoClient(context: try ZMQContext(), endpoint: local, configuration: configuration, logger: Logger(label: "flowbus.test"))
            return try client.request(service: "flowbus.echo", body: [Array("hi".utf8)])
        }
        #expect(served == [Array("hi".utf8)])
    }

    @Test("one address past the connection rate is refused and counted, and let in again as the rate allows; snapshots past their rate are dropped and counted",
          .timeLimit(.minutes(1)))
    func connectionAndSnapshotRates() async throws {
        // 5 connections a second, 50 at once; 2 snapshots a second, 8 at once.
        let (host, port) = try await Self.startHost(open: false, extra: ["--connection-rate", "5", "--snapshot-rate", "2"])
        defer { Task { try? await host.stop() } }
        try await BusEndToEndTests.waitForEcho(host)

        // 80 clients from 127.0.0.1 at once: 50 get in, the rest are refused (a refused handshake
        // ends the connection: libzmq does not try again by itself).
        let first = try await onThread { try Self.askMMI(port: port, clients: 80, wait: .seconds(3)) }
        // (The bucket refills by 5 a second while the 80 handshakes go on: a few more may get in.)
        #expect((50...56).contains(first), "the burst of 50 connections gets in, the rest are refused; \(first) of 80 answered")
        // A second later the bucket holds 5 again: refused clients that connect anew get in.
        try await Task.sleep(for: .milliseconds(1100))
        let again = try await onThread { try Self.askMMI(port: port, clients: 5, wait: .seconds(3)) }
        #expect(again == 5, "\(again) of 5 new connections answered a second later")

        // One client asking for 20 snapshots at once: about the burst of 8 served, the rest dropped.
        let served = try await onThread { () -> Int in
            let context = try ZMQContext()
            let socket = try ZMQSocket(context: context, type: .dealer, linger: .zero)
            try socket.connect("tcp://127.0.0.1:\(port + 1)")
            for _ in 0..<20 { try socket.send([Array("ICANHAZ?".utf8), Array("/schema/".utf8)]) }
            let poller = ZMQPoller()
            poller.add(socket)
            var ends = 0
            while try poller.poll(timeout: .milliseconds(700)) > 0 {
                guard let message = try socket.receiveMessage() else { continue }
                if message.first == Array("KTHXBAI".utf8) { ends += 1 }
            }
            return ends
        }
        #expect((8...11).contains(served), "8 snapshots at once and 2 a second; \(served) of 20 served")

        let counted = await HostFixture.eventually(timeout: .seconds(5), every: .milliseconds(100)) {
            guard let status = await host.statusIfAnswered() else { return false }
            return (status["connectionsRateLimited"] as? Int ?? 0) >= 1 && Self.counter(status, "clone", "snapshotsRateLimited") >= 9
        }
        let status = try await host.status()
        #expect(counted, "connections \(status["connectionsRateLimited"] ?? "-"), clone \(status["clone"] ?? "-")")
        let ps = try await host.run(["ps"])
        #expect(ps.output.contains("over the rate:"), "\(ps.output)")
    }

    @Test("--open lets a tcp peer register as a worker, and the host says it is open", .timeLimit(.minutes(1)))
    func openModeAdmitsEveryone() async throws {
        let (host, port) = try await Self.startHost(open: true)
        defer { Task { try? await host.stop() } }
        try await BusEndToEndTests.waitForEcho(host)
        #expect(host.descriptor?["access"] as? String == "open")
        let heartbeat = try await onThread { () -> [Frame]? in
            // Registered, the worker hears the broker's HEARTBEAT instead of DISCONNECT.
            try Self.exchange(.dealer, "tcp://127.0.0.1:\(port)", [[], Array("MDPW01".utf8), [0x01], Array("svc.forged".utf8)])
        }
        #expect(heartbeat?[2] == [0x04], "an open host must take the READY, got \(String(describing: heartbeat))")
        let ps = try await host.run(["ps"])
        #expect(ps.output.contains("access   OPEN"), "\(ps.output)")
        #expect(host.hostLog.contains("OPEN MODE"))
    }
}
