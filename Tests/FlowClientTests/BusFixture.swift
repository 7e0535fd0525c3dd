import Clone
import Dispatch
import FlowClient
import FlowProtocol
import FlowbusTesting
import Foundation
import Logging
import Majordomo
import SwiftProtobuf
import Synchronization
import ZeroMQ

let quietLogger = Logger(label: "flowbus.test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A real MDP broker and Clone server in this process, a writer agent that publishes as the
/// app's plugins would, and small MDP workers standing in for coord.* and vm.*.
final class BusFixture: @unchecked Sendable {
    let context: ZMQContext
    let broker: BrokerHandle
    let clone: CloneServerHandle
    let endpoints: BusEndpoints
    let writer: CloneAgent
    private var workers: [TestWorker] = []

    init() async throws {
        context = try ZMQContext()
        let folder = TestScratch.directory("fbcl")
        var brokerConfiguration = BrokerConfiguration()
        brokerConfiguration.heartbeatInterval = .milliseconds(100)
        brokerConfiguration.heartbeatLiveness = 10
        brokerConfiguration.requestExpiry = .seconds(2)
        broker = try MajordomoBroker.start(context: context, configuration: brokerConfiguration, endpoints: ["ipc://\(folder)/b"], logger: quietLogger)
        let cloneEndpoints = try CloneEndpoints(base: "ipc://\(folder)/c")
        var cloneConfiguration = CloneServerConfiguration()
        cloneConfiguration.hugzInterval = .milliseconds(100)
        clone = try CloneServer.start(context: context, configuration: cloneConfiguration, endpoints: cloneEndpoints, logger: quietLogger)
        endpoints = BusEndpoints(broker: broker.endpoints[0], clone: cloneEndpoints)
        var configuration = CloneAgentConfiguration(subtrees: ["/w/"])
        configuration.serverTimeout = .seconds(1)
        writer = try CloneAgent(context: context, endpoints: cloneEndpoints, configuration: configuration, logger: quietLogger)
        guard await writer.waitUntilSynced(timeout: .seconds(10)) else { throw TestFailure("the writer agent did not sync") }
    }

    deinit {
        for worker in workers { worker.stop() }
        writer.stop()
        clone.stop()
        broker.stop()
    }

    static var options: SessionClientOptions {
        var options = SessionClientOptions()
        options.name = "test-client"
        options.requestTimeout = .seconds(3)
        options.requestTries = 1
        options.cloneServerTimeout = .seconds(1)
        options.syncTimeout = .seconds(10)
        return options
    }

    /// Serves `service` with `handler` until the fixture ends; returns once the broker knows it.
    @discardableResult
    func serve(_ service: String, handler: @escaping @Sendable (Envelope) -> any SwiftProtobuf.Message) async throws -> TestWorker {
        let worker = TestWorker(context: context, endpoint: endpoints.broker, service: service, handler: handler)
        workers.append(worker)
        let deadline = ContinuousClock.now + .seconds(10)
        while broker.statistics.workersPerService[service, default: 0] == 0 {
            guard ContinuousClock.now < deadline else { throw TestFailure("\(service) did not register") }
            try await Task.sleep(for: .milliseconds(10))
        }
        return worker
    }

    /// A coord.app that opens session `id` (publishing `navigation`) and answers every intent `applied`.
    @discardableResult
    func serveApp(session id: String, navigation: Flowbus_V1_Navigation) async throws -> TestWorker {
        try await serve("coord.app") { [self] envelope in
            if let call = try? envelope.unwrap(Flowbus_V1_CoordinatorCall.self) {
                var reply = Flowbus_V1_CoordinatorReply()
                reply.ok = true
                if call.method == "openSession" {
                    reply.result["session"] = call.args["session"] ?? id
                    try? publish(navigation, at: "/s/\(id)/nav", keyVersion: navigation.version)
                }
                return reply
            }
            return Self.applied()
        }
    }

    func publish(_ message: some SwiftProtobuf.Message, at key: String, writer name: String = "coord-app", incarnation: UInt64 = 1, keyVersion: UInt64 = 0) throws {
        let envelope = try Envelope.wrapping(message, session: "", writer: name, incarnation: incarnation, keyVersion: keyVersion)
        try writer.set(key: key, value: try envelope.encoded())
    }

    /// A view model's state, offering `actions` (served by `vm.<kind>`).
    func publishState(_ session: String, kind: String, phase: Flowbus_V1_ViewState.Phase, version: UInt64, message: String = "",
                      notice: String = "", screenID: String? = nil, incarnation: UInt64 = 1, actions: [String] = []) throws {
        var state = Flowbus_V1_ViewState()
        state.phase = phase
        state.message = message
        state.screenVersion = version
        state.screenID = screenID ?? kind
        state.notice = notice
        state.actions = actions.map { Self.action($0, service: "vm.\(kind)", handler: .viewModel) }
        try publish(state, at: "/s/\(session)/vm/\(kind)", writer: "vm-\(kind)", incarnation: incarnation, keyVersion: version)
    }

    static func applied(version: UInt64 = 0) -> Flowbus_V1_IntentReply {
        var reply = Flowbus_V1_IntentReply()
        reply.applied = true
        reply.screenVersion = version
        return reply
    }

    static func refused(_ code: ErrorCode, _ message: String) -> Flowbus_V1_IntentReply {
        var reply = Flowbus_V1_IntentReply()
        reply.error.code = code
        reply.error.message = message
        reply.error.hint = "render the current state, then act again"
        return reply
    }

    static func action(_ name: String, service: String, handler: Flowbus_V1_Action.Handler, fields: [String] = []) -> Flowbus_V1_Action {
        var action = Flowbus_V1_Action()
        action.name = name
        action.label = name
        action.service = service
        action.handler = handler
        action.fields = fields
        return action
    }

    /// A screen whose owner offers `actions` on it (served by `coord.<owner>`).
    static func screen(_ kind: String, owner: String, id: String? = nil, actions: [String] = []) -> Flowbus_V1_Screen {
        var screen = Flowbus_V1_Screen()
        screen.kind = kind
        screen.id = id ?? kind
        screen.owner = owner
        screen.viewModel = "vm.\(kind)"
        screen.actions = actions.map { action($0, service: "coord.\(owner)", handler: .coordinator) }
        return screen
    }

    static func stack(_ screens: [Flowbus_V1_Screen], version: UInt64) -> Flowbus_V1_Navigation {
        var navigation = Flowbus_V1_Navigation()
        navigation.root = .stack
        var stack = Flowbus_V1_Navigation.Stack()
        stack.screens = screens
        navigation.stacks = [stack]
        navigation.version = version
        navigation.actions = [action("back", service: "coord.app", handler: .coordinator)]
        return navigation
    }

    static func tabs(_ tabs: [(String, [Flowbus_V1_Screen])], selected: String, version: UInt64) -> Flowbus_V1_Navigation {
        var navigation = Flowbus_V1_Navigation()
        navigation.root = .tabs
        navigation.stacks = tabs.map { name, screens in
            var stack = Flowbus_V1_Navigation.Stack()
            stack.tab = name
            stack.screens = screens
            return stack
        }
        navigation.selectedTab = selected
        navigation.version = version
        navigation.actions = [action("back", service: "coord.app", handler: .coordinator),
                              action("selectTab", service: "coord.app", handler: .coordinator, fields: ["tab"])]
        return navigation
    }
}

/// One MDP worker on a thread of its own, recording every request it served.
final class TestWorker: Sendable {
    let received = Mutex<[Envelope]>([])
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(context: ZMQContext, endpoint: String, service: String, handler: @escaping @Sendable (Envelope) -> any SwiftProtobuf.Message) {
        let thread = Thread { [self] in
            defer { finished.signal() }
            let configuration = WorkerConfiguration(heartbeatInterval: .milliseconds(100), heartbeatLiveness: 10,
                                                    reconnectInitial: .milliseconds(50), reconnectMax: .milliseconds(400))
            guard let worker = try? MajordomoWorker(context: context, endpoint: endpoint, service: service,
                                                    configuration: configuration, logger: quietLogger) else { return }
            try? worker.run(until: { stopping.load(ordering: .relaxed) }) { request in
                guard let body = request.body.first, let envelope = try? Envelope.decodeChecked(body) else { return [] }
                received.withLock { $0.append(envelope) }
                let reply = handler(envelope)
                let answer = try? Envelope.wrapping(reply, session: envelope.session, idempotencyKey: envelope.idempotencyKey, writer: service).encoded()
                return [answer ?? []]
            }
        }
        thread.start()
    }

    var intents: [Flowbus_V1_Intent] {
        received.withLock { $0.compactMap { try? $0.unwrap(Flowbus_V1_Intent.self) } }
    }

    func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        finished.wait()
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
