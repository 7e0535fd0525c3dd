import FlowbusTesting
import SwiftProtobuf
import Clone
import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import Testing
import ZeroMQ

/// The app's coordinators as real processes under a real host: sessions, navigation owned by
/// coord.app, child flows recorded under /c/, stale intents refused, a kill -9 survived.
@Suite("Coordinators end to end", .serialized)
struct CoordinatorsEndToEndTests {
    static let logger = Logger(label: "flowbus.test")

    static let manifest = """
    supervisor:
      intensity: 5
      period: 10s
      backoff: { initial: 50ms, max: 1s }
      shutdown_timeout: 3s
    plugins:
      - { name: coord-app, command: movies-coordinator, args: ["--coordinator", "app"] }
      - { name: coord-auth, command: movies-coordinator, args: ["--coordinator", "auth"] }
      - { name: coord-signup, command: movies-coordinator, args: ["--coordinator", "signup"] }
    """

    struct Bus: @unchecked Sendable {
        let context: ZMQContext
        let client: MajordomoClient
        let agent: CloneAgent
        /// The host's session-capability key, read from its run directory as the user's own tools
        /// may: this test speaks for the plugins, so it signs what it sends as one.
        let capabilities: CapabilityKey?

        func signed(_ message: some SwiftProtobuf.Message, session: String, key: String = UUID().uuidString, writer: String = "test/0", incarnation: UInt64 = 1) throws -> [UInt8] {
            var envelope = try Envelope.wrapping(message, session: session, idempotencyKey: key, writer: writer, incarnation: incarnation)
            if let capabilities { envelope.capability = capabilities.token(.plugin, session: session) }
            return try envelope.encoded()
        }

        func call(_ service: String, _ message: some SwiftProtobuf.Message, session: String, key: String = UUID().uuidString) throws -> Envelope {
            let body = try signed(message, session: session, key: key)
            let reply = try client.request(service: service, body: [body])
            return try Envelope.decodeChecked(try #require(reply.first))
        }

        func navigation(_ session: String) -> Flowbus_V1_Navigation? {
            guard let entry = agent.get("/s/\(session)/nav"), !entry.value.isEmpty,
                  let envelope = try? Envelope.decodeChecked(entry.value) else { return nil }
            return try? envelope.unwrap(Flowbus_V1_Navigation.self)
        }

        func instances(_ session: String) -> [String] {
            agent.entries(prefix: "/c/").filter { $0.key.hasSuffix("/\(session)") && !$0.value.isEmpty }
                .map { String($0.key.split(separator: "/")[1]) }.sorted()
        }
    }

    static func intent(_ action: String, screen: String, version: UInt64, fields: [String: String] = [:]) -> Flowbus_V1_Intent {
        var intent = Flowbus_V1_Intent()
        intent.screen = screen
        intent.action = action
        intent.screenVersion = version
        intent.fields = fields
        return intent
    }

    static func call(_ method: String, ops: [Flowbus_V1_NavigationOp] = []) -> Flowbus_V1_CoordinatorCall {
        var call = Flowbus_V1_CoordinatorCall()
        call.method = method
        call.ops = ops
        return call
    }

    static func topKind(_ navigation: Flowbus_V1_Navigation?) -> String? {
        navigation?.stacks.first?.screens.last?.kind
    }

    @Test("open a session, push a child flow, refuse a stale back, survive kill -9, close", .timeLimit(.minutes(2)))
    func sessionLifecycle() async throws {
        let host = try await HostFixture.start(manifest: Self.manifest)
        defer { Task { try? await host.stop() } }
        let ready = await HostFixture.eventually(timeout: .seconds(15), every: .milliseconds(100)) {
            let workers = (await host.statusIfAnswered()?["broker"] as? [String: Any])?["workersPerService"] as? [String: Int] ?? [:]
            return ["coord.app", "coord.auth", "coord.signup"].allSatisfy { (workers[$0] ?? 0) > 0 }
        }
        try #require(ready, "the coordinators did not register:\n\(host.hostLog)")

        let bus = try await onThread {
            let context = try ZMQContext()
            var configuration = ClientConfiguration()
            configuration.timeout = .seconds(3)
            configuration.tries = 2
            let client = try MajordomoClient(context: context, endpoint: try #require(host.endpoint("broker")), configuration: configuration, logger: Self.logger)
            let endpoints = CloneEndpoints(
                snapshot: try #require(host.endpoint("cloneSnapshot")), publisher: try #require(host.endpoint("clonePublisher")),
                collector: try #require(host.endpoint("cloneCollector")))
            let agent = try CloneAgent(context: context, endpoints: endpoints, configuration: CloneAgentConfiguration(subtrees: ["/s/", "/c/"]), logger: Self.logger)
            let key = (try? String(contentsOfFile: host.runDirectory + "/session.key", encoding: .utf8)).flatMap { CapabilityKey(hex: $0) }
            // Required as a value: passed straight to the optional parameter, #require would take
            // the optional itself and never fail.
            let capabilities: CapabilityKey = try #require(key, "a closed host writes session.key")
            return Bus(context: context, client: client, agent: agent, capabilities: capabilities)
        }
        defer { bus.agent.stop() }

        let open = Self.call("openSession")
        let opened = try await onThread { try bus.call("coord.app", open, session: "").unwrap(Flowbus_V1_CoordinatorReply.self) }
        #expect(opened.ok)
        let session = try #require(opened.result["session"])

        #expect(await HostFixture.eventually(timeout: .seconds(5)) { Self.topKind(bus.navigation(session)) == "signin" })
        #expect(await HostFixture.eventually(timeout: .seconds(5)) { bus.instances(session) == ["app", "auth"] })
        let first = try #require(bus.navigation(session))
        #expect(first.stacks.first?.screens.first?.owner == "auth")

        // A navigation action goes to the owner of the screen; the owner asks coord.app.
        let register = try await onThread {
            try bus.call("coord.auth", Self.intent("register", screen: "signin", version: first.version), session: session)
                .unwrap(Flowbus_V1_IntentReply.self)
        }
        #expect(register.applied, "\(register.error)")
        #expect(await HostFixture.eventually(timeout: .seconds(5)) { Self.topKind(bus.navigation(session)) == "signup" })
        #expect(await HostFixture.eventually(timeout: .seconds(5)) { bus.instances(session) == ["app", "auth", "signup"] })

        // Back made on the version before the push is stale: refused, nothing changes.
        let stale = try await onThread {
            try bus.call("coord.app", Self.intent("back", screen: "signup", version: first.version), session: session)
                .unwrap(Flowbus_V1_IntentReply.self)
        }
        #expect(!stale.applied)
        #expect(stale.error.code == .staleIntent)
        #expect(Self.topKind(bus.navigation(session)) == "signup")
        let current = try #require(bus.navigation(session))
        let back = try await onThread {
            try bus.call("coord.app", Self.intent("back", screen: "signup", version: current.version), session: session)
                .unwrap(Flowbus_V1_IntentReply.self)
        }
        #expect(back.applied, "\(back.error)")
        #expect(await HostFixture.eventually(timeout: .seconds(5)) { Self.topKind(bus.navigation(session)) == "signin" })

        // kill -9 the auth coordinator: it comes back, resumes the session from /c/auth/, and acts.
        let auth = try #require(try await host.plugins().first { $0["name"] as? String == "coord-auth" })
        let victim = try #require((auth["pid"] as? Int).map(Int32.init))
        kill(victim, SIGKILL)
        #expect(try await HostFixture.eventually(timeout: .seconds(10), every: .milliseconds(100)) {
            let again = try await host.plugins().first { $0["name"] as? String == "coord-auth" }
            return again?["state"] as? String == "running" && (again?["pid"] as? Int).map(Int32.init) != victim
        })
        let beforeForgot = try #require(bus.navigation(session))
        let forgot = try await onThread {
            try bus.call("coord.auth", Self.intent("forgotPassword", screen: "signin", version: beforeForgot.version), session: session)
                .unwrap(Flowbus_V1_IntentReply.self)
        }
        #expect(forgot.applied, "the restarted auth coordinator did not resume the session: \(forgot.error)")
        #expect(await HostFixture.eventually(timeout: .seconds(5)) { Self.topKind(bus.navigation(session)) == "forgotpassword" })
        #expect(bus.navigation(session)?.stacks.first?.screens.map(\.kind) == ["signin", "forgotpassword"])

        // A navigate call from an older incarnation of a writer already seen is fenced off.
        let navigate = Self.call("navigate", ops: [{ var op = Flowbus_V1_NavigationOp(); op.kind = .pop; return op }()])
        let fenced = try await onThread { () -> Flowbus_V1_CoordinatorReply in
            let newer = try bus.signed(navigate, session: session, writer: "rogue/0", incarnation: 5)
            _ = try bus.client.request(service: "coord.app", body: [newer])
            let older = try bus.signed(navigate, session: session, writer: "rogue/0", incarnation: 4)
            return try Envelope.decodeChecked(try #require(try bus.client.request(service: "coord.app", body: [older]).first))
                .unwrap(Flowbus_V1_CoordinatorReply.self)
        }
        #expect(!fenced.ok)
        #expect(fenced.error.code == .fenced)

        let close = Self.call("closeSession")
        let closed = try await onThread { try bus.call("coord.app", close, session: session).unwrap(Flowbus_V1_CoordinatorReply.self) }
        #expect(closed.ok)
        #expect(await HostFixture.eventually(timeout: .seconds(5)) { bus.instances(session).isEmpty && bus.navigation(session) == nil })
    }
}
