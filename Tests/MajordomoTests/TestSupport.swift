import Dispatch
import FlowbusTesting
import Foundation
import Logging
import Majordomo
import MessagePath
import Synchronization
import ZeroMQ

/// A fresh ipc:// endpoint under its own short temporary folder, so parallel tests never collide.
func ipcEndpoint(_ name: String = "b") -> String {
    let folder = TestScratch.directory("fbm")
    return "ipc://\(folder)/\(name)"
}

let quietLogger = Logger(label: "flowbus.test", factory: { _ in SwiftLogNoOpLogHandler() })

func frames(_ texts: String...) -> [Frame] { texts.map { Array($0.utf8) } }

func text(_ frame: Frame) -> String { String(decoding: frame, as: UTF8.self) }

/// Short heartbeats, so liveness tests take about a second, with room for a machine
/// loaded by parallel builds (liveness 1 s, expiry 2 s). A test of the heartbeats' timing sets
/// its own interval, liveness and tick.
func fastBrokerConfiguration(
    heartbeat: Duration = .milliseconds(100), liveness: Int = 10, tick: Duration = .milliseconds(50)
) -> BrokerConfiguration {
    var configuration = BrokerConfiguration()
    configuration.heartbeatInterval = heartbeat
    configuration.heartbeatLiveness = liveness
    configuration.requestExpiry = .seconds(2)
    configuration.statisticsInterval = tick
    return configuration
}

func fastWorkerConfiguration(routingID: String? = nil) -> WorkerConfiguration {
    WorkerConfiguration(
        heartbeatInterval: .milliseconds(100), heartbeatLiveness: 10,
        reconnectInitial: .milliseconds(50), reconnectMax: .milliseconds(400), routingID: routingID
    )
}

/// Runs blocking ZeroMQ code on a dedicated thread, never on Swift's cooperative pool.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
/// For state that has no event to await (broker counters, worker tables). Suspends between
/// polls, so the cooperative pool stays free for the tasks the condition waits on.
func eventually(timeout: Duration = .seconds(5), _ condition: () throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try condition()
}

/// `eventually` for code already on a dedicated thread: blocks it between polls.
func waitUntil(timeout: Duration = .seconds(5), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        usleep(10_000)
    }
    return try condition()
}

/// A `MajordomoWorker` serving on a thread of its own until stopped.
final class WorkerRunner: Sendable {
    let stopping = Atomic<Bool>(false)
    let served = Atomic<Int>(0)
    let connections = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    init(
        context: ZMQContext, endpoint: String, service: String,
        configuration: WorkerConfiguration = fastWorkerConfiguration(),
        handler: @escaping @Sendable (MajordomoRequest) -> [Frame] = { $0.body }
    ) {
        let thread = Thread { [self] in
            defer { finished.signal() }
            guard let worker = try? MajordomoWorker(
                context: context, endpoint: endpoint, service: service, configuration: configuration, logger: quietLogger
            ) else { return }
            try? worker.run(until: { [self] in
                connections.store(worker.connections, ordering: .relaxed)
                return stopping.load(ordering: .relaxed)
            }) { [self] request in
                served.add(1, ordering: .relaxed)
                return handler(request)
            }
        }
        thread.start()
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }
}

/// A started broker on a fresh ipc endpoint, with its own context.
struct BrokerFixture {
    let context: ZMQContext
    let broker: BrokerHandle
    let faults: FaultRules
    var endpoint: String { broker.endpoints[0] }

    init(configuration: BrokerConfiguration = fastBrokerConfiguration(), faults: FaultRules = FaultRules()) throws {
        context = try ZMQContext()
        self.faults = faults
        broker = try MajordomoBroker.start(
            context: context, configuration: configuration, endpoints: [ipcEndpoint()], faults: faults, logger: quietLogger
        )
    }

    func client(timeout: Duration = .seconds(2), tries: Int = 1) throws -> MajordomoClient {
        try MajordomoClient(
            context: context, endpoint: endpoint,
            configuration: ClientConfiguration(timeout: timeout, tries: tries), logger: quietLogger
        )
    }

    func worker(_ service: String, configuration: WorkerConfiguration = fastWorkerConfiguration(),
                handler: @escaping @Sendable (MajordomoRequest) -> [Frame] = { $0.body }) -> WorkerRunner {
        WorkerRunner(context: context, endpoint: endpoint, service: service, configuration: configuration, handler: handler)
    }

    /// Waits until the broker lists `count` workers for `service`.
    func awaitWorkers(_ service: String, count: Int, timeout: Duration = .seconds(5)) async throws -> Bool {
        try await eventually(timeout: timeout) { broker.statistics.workersPerService[service, default: 0] == count }
    }
}
