import Clone
import FlowbusTesting
import FlowClient
import FlowHost
import FlowProtocol
import Foundation
import Testing

/// Session capabilities on a closed host, against tcp clients that cannot read the host's key:
/// the probe of issue 13 attached to a victim's session, sent intents with its id, and poisoned
/// fencing with a forged CoordinatorCall. Each is refused (FORBIDDEN, saying why); the opener's
/// drive capability and an observer's watch capability work.
@Suite("Session capabilities", .serialized)
struct SessionCapabilityEndToEndTests {
    static func startOnTCP(manifest: String? = nil) async throws -> (HostFixture, BusEndpoints) {
        for _ in 0..<5 {
            let port = Int.random(in: 20_000..<32_000)
            let arguments = ["--broker", "tcp://127.0.0.1:\(port)", "--clone", "tcp://127.0.0.1:\(port + 1)"]
            guard let host = try? await AppJourneysEndToEndTests.startApp(manifest: manifest, arguments: arguments) else { continue }
            let descriptor = try RunDirectory(path: host.runDirectory).requireLiveHost()
            // What a client on another machine has: the tcp endpoints, not the run directory's key.
            let endpoints = BusEndpoints(
                broker: descriptor.endpoints.broker,
                clone: CloneEndpoints(
                    snapshot: descriptor.endpoints.cloneSnapshot, publisher: descriptor.endpoints.clonePublisher,
                    collector: descriptor.endpoints.cloneCollector))
            return (host, endpoints)
        }
        throw CancellationError()
    }

    static func options(_ name: String) -> SessionClientOptions {
        var options = SessionClientOptions()
        options.name = name
        options.syncTimeout = .seconds(3)
        return options
    }

    /// Sends `intent` for `session` to `service` with `capability`, as a hand-made client would.
    static func rawIntent(
        _ connection: BusConnection, service: String, session: String, action: String, capability: String?
    ) async throws -> Flowbus_V1_IntentReply {
        var intent = Flowbus_V1_Intent()
        intent.action = action
        var envelope = try Envelope.wrapping(intent, session: session, idempotencyKey: UUID().uuidString, writer: "probe/0")
        if let capability { envelope.capability = capability }
        let reply = try await connection.requester.request(service: service, envelope: envelope)
        return try reply.unwrap(Flowbus_V1_IntentReply.self)
    }

    /// The probe's anonymous client opened sessions without end; one tcp client now holds at most
    /// `--max-sessions-per-client`, told why past it, while the user's own tools still open theirs.
    @Test("a tcp client opens no session past its own limit; a local tool still opens one", .timeLimit(.minutes(2)))
    func sessionsPerClientAreBounded() async throws {
        let manifest = try SessionExpiryEndToEndTests.manifest(extra: ["--max-sessions-per-client", "2"])
        let (host, endpoints) = try await Self.startOnTCP(manifest: manifest)
        defer { Task { try? await host.stop() } }
        var held: [SessionClient] = []
        defer { for client in held { client.stop() } }
        for index in 0..<2 { held.append(try await SessionClient.open(endpoints, options: Self.options("probe/\(index)"))) }
        do {
            let third = try await SessionClient.open(endpoints, options: Self.options("probe/2"))
            third.stop()
            Issue.record("a third session opened past the client's limit of 2: \(third.session)")
        } catch {
            #expect("\(error)".contains("already hold 2 open sessions") && "\(error)".contains("--max-sessions-per-client"), "\(error)")
        }
        let local = try await SessionClient.open(try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory)), options: Self.options("local/0"))
        local.stop()
        // Closing one of its sessions lets the client open another.
        try await held[0].close()
        let again = try await SessionClient.open(endpoints, options: Self.options("probe/3"))
        again.stop()
    }

    @Test("an opener's drive capability works; attaching, intents and forged calls without it are FORBIDDEN; a watch capability only reads",
          .timeLimit(.minutes(3)))
    func capabilitiesGuardSessions() async throws {
        let (host, endpoints) = try await Self.startOnTCP()
        defer { Task { try? await host.stop() } }

        // The victim opens a session over tcp and gets its two capabilities.
        let victim = try await SessionClient.open(endpoints, options: Self.options("victim/0"))
        defer { victim.stop() }
        let drive = try #require(victim.capability, "a closed host's openSession must return a drive capability")
        let watch = try #require(victim.watchCapability, "and a watch capability for observers")
        #expect(drive.hasPrefix("drive.") && watch.hasPrefix("watch."))
        try await victim.waitUntil(timeout: .seconds(20)) { $0.screen == "signin" }
        let signin = try await victim.prepareWhenOffered(action: "logIn", fields: ["email": "demo@flowbus.dev", "password": "flowbus123"], wait: .seconds(20))
        #expect(try await victim.send(signin).applied)
        try await victim.waitUntil(timeout: .seconds(20)) { $0.screen == "home" && $0.phase == .success }

        // 1. Attaching to the victim's session without its capability is refused, saying why.
        do {
            let intruder = try await SessionClient.attach(victim.session, endpoints: endpoints, options: Self.options("probe/1"))
            intruder.stop()
            Issue.record("attaching without a capability must be refused")
        } catch {
            guard case .refused(_, _, let wire) = error else { throw error }
            #expect(wire.code == .forbidden, "\(wire)")
            #expect(wire.message.contains("capability"), "\(wire.message)")
        }

        // 2. Reading it without one: the Clone server refuses the snapshot, and the client says so.
        do {
            let reader = try await SessionClient.attach(victim.session, endpoints: endpoints, announce: false, options: Self.options("probe/2"))
            reader.stop()
            Issue.record("reading a session without a capability must be refused")
        } catch {
            guard case .readRefused(let session, let reason) = error else { throw error }
            #expect(session == victim.session && reason.contains("capability"), "\(error)")
        }

        // 3. Intents with the victim's id: no capability, another session's, a watch one.
        let probe = try BusConnection(endpoints: endpoints, options: Self.options("probe/3"))
        defer { probe.stop() }
        let own = try await probe.openSession(requested: nil)
        let presented: [(String?, String)] = [(nil, "carries no capability"), (own.drive, "not one this host made"), (watch, "grants only watch")]
        for (capability, says) in presented {
            let reply = try await Self.rawIntent(probe, service: "vm.home", session: victim.session, action: "select", capability: capability)
            #expect(!reply.applied && reply.error.code == .forbidden, "\(reply)")
            #expect(reply.error.message.contains(says), "\(reply.error.message)")
        }
        // A view-model lifecycle action is the navigation owner's alone, even with the drive capability.
        let appear = try await Self.rawIntent(probe, service: "vm.home", session: victim.session, action: "reset", capability: drive)
        #expect(!appear.applied && appear.error.code == .forbidden, "\(appear)")

        // 4. A forged coordinator call claiming a huge incarnation: refused before it can fence anyone.
        var call = Flowbus_V1_CoordinatorCall()
        call.method = "navigate"
        var forged = try Envelope.wrapping(call, session: victim.session, idempotencyKey: UUID().uuidString, writer: "coord-home/0", incarnation: 1 << 62)
        forged.capability = drive
        let answer = try await probe.requester.request(service: "coord.app", envelope: forged)
        let refusal = try answer.unwrap(Flowbus_V1_CoordinatorReply.self)
        #expect(!refusal.ok && refusal.error.code == .forbidden, "\(refusal)")

        // The victim still acts: nothing above changed its session or poisoned fencing.
        let select = try await victim.prepareWhenOffered(action: "select", fields: ["item": "actor:1"], wait: .seconds(10))
        let selected = try await victim.send(select)
        #expect(selected.applied, "\(selected)")
        try await victim.waitUntil(timeout: .seconds(20)) { $0.screen == "details" }

        // 5. An observer with the watch capability follows the session but cannot act on it.
        let observer = try await SessionClient.attach(
            victim.session, capability: watch, endpoints: endpoints, announce: false, options: Self.options("observer/0"))
        defer { observer.stop() }
        try await observer.waitUntil(timeout: .seconds(10)) { $0.screen == "details" }
        let back = try observer.prepare(action: "back")
        let outcome = try await observer.send(back)
        #expect(!outcome.applied && outcome.error?.code == .forbidden, "\(outcome)")

        // 6. The opener attaches again from a new connection with its drive capability.
        let again = try await SessionClient.attach(victim.session, capability: drive, endpoints: endpoints, options: Self.options("victim/1"))
        defer { again.stop() }
        try await again.waitUntil(timeout: .seconds(10)) { $0.screen == "details" }
        #expect(again.capability == drive)
    }
}
