import Clone
@testable import FlowKit
import FlowProtocol
import FlowbusTesting
import Foundation
import Logging
import Majordomo
import MessagePath
import Synchronization
import Testing
import ZeroMQ

/// `PluginBus.announceStop`: a plugin's serving loops sleep until a request, a heartbeat or the
/// announced stop, instead of waking ten times a second to look at their stop condition.
@Suite("Stop announcements")
struct StopAnnouncementTests {
    static let quiet = Logger(label: "flowbus.test", factory: { _ in SwiftLogNoOpLogHandler() })

    static func bus(broker: String = "ipc:///nonexistent/broker", heartbeat: Duration = .milliseconds(500)) throws -> PluginBus {
        let clone = try CloneEndpoints(base: "ipc:///nonexistent/clone")
        return try PluginBus(environment: PluginEnvironment(broker: broker, clone: clone, plugin: "stops", heartbeat: heartbeat), logger: quiet)
    }

    static func isWoken(_ wake: WakeSignal) -> Bool {
        var descriptor = pollfd(fd: wake.fileDescriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 1
    }

    @Test func aSignalIsWokenOnlyWhenTheStopIsAnnounced() throws {
        let unannounced = try Self.bus()
        let early = try WakeSignal()
        #expect(!unannounced.wakeOnStop(early), "nobody said the stop will be announced: the loop must look itself")

        let bus = try Self.bus()
        bus.stopWillBeAnnounced()
        let registered = try WakeSignal()
        #expect(bus.wakeOnStop(registered))
        #expect(!Self.isWoken(registered))
        bus.announceStop()
        #expect(Self.isWoken(registered))
        // A loop that registers after the announcement is woken at once.
        let late = try WakeSignal()
        #expect(bus.wakeOnStop(late))
        #expect(Self.isWoken(late))
    }

    /// A broker whose heartbeats are 10 s apart, so that an idle worker has no reason to wake.
    final class QuietBroker: @unchecked Sendable {
        let context: ZMQContext
        let broker: BrokerHandle
        let endpoint: String

        init() throws {
            endpoint = "ipc://\(TestScratch.directory("fbstop"))/broker"
            context = try ZMQContext()
            var configuration = BrokerConfiguration()
            configuration.heartbeatInterval = .seconds(10)
            broker = try MajordomoBroker.start(context: context, configuration: configuration, endpoints: [endpoint], logger: StopAnnouncementTests.quiet)
        }

        func awaitWorker(_ service: String) async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while broker.statistics.workersPerService[service, default: 0] == 0 {
                if ContinuousClock.now >= deadline { return false }
                try await Task.sleep(for: .milliseconds(10))
            }
            return true
        }

        deinit { broker.stop() }
    }

    /// A coordinator's or view model's serving loop, idle for a second with its stop announced,
    /// is scheduled a few times at most (it was at least ten with its 100 ms look at `stop`), and
    /// ends as soon as the stop is announced, long before its next heartbeat.
    @Test func anIdleLaneServerSleepsUntilItsStopIsAnnounced() async throws {
        let quiet = try QuietBroker()
        let bus = try Self.bus(broker: quiet.endpoint, heartbeat: .seconds(10))
        bus.stopWillBeAnnounced()
        let stopping = Atomic<Bool>(false)
        let thread = ThreadRuns()
        let ended = ThreadRuns.Ended()
        Thread.detachNewThread {
            thread.mark()
            defer { ended.signal() }
            try? SessionLaneServer.serve(
                service: "vm.stops", bus: bus, map: MemoryStateMap(), writer: "stops/0", credit: 4, threads: 1, logger: Self.quiet,
                until: { stopping.load(ordering: .relaxed) }, ready: {}, malformed: {}, handle: { envelope, _ in envelope })
        }
        #expect(try await quiet.awaitWorker("vm.stops"))
        try await Task.sleep(for: .milliseconds(200))
        let before = try #require(thread.runs())
        try await Task.sleep(for: .seconds(1))
        let idleRuns = try #require(thread.runs()) - before
        #expect(idleRuns < 5, "the idle loop was scheduled \(idleRuns) times in a second")

        stopping.store(true, ordering: .relaxed)
        bus.announceStop()
        #expect(await ended.wait(upTo: .seconds(3)), "the loop did not end on the announced stop")
    }

    /// The same for the services' loops; a stop nobody announces is still seen within 100 ms.
    @Test func idleServicesSleepUntilTheirStopIsAnnounced() async throws {
        let quiet = try QuietBroker()
        for announced in [true, false] {
            let bus = try Self.bus(broker: quiet.endpoint, heartbeat: .seconds(10))
            if announced { bus.stopWillBeAnnounced() }
            let stopping = Atomic<Bool>(false)
            let ended = ThreadRuns.Ended()
            Thread.detachNewThread {
                defer { ended.signal() }
                let handler: ServiceHandler = { _ in Flowbus_V1_ServiceReply() }
                try? ServiceWorkerRuntime.serve(["svc.stops": handler], bus: bus, until: { stopping.load(ordering: .relaxed) })
            }
            #expect(try await quiet.awaitWorker("svc.stops"))
            try await Task.sleep(for: .milliseconds(300))
            let serving = ThreadRuns.threads(named: "fb-svc.stops")
            try #require(serving.count == 1, "the service's thread is named after it")
            let before = try #require(serving[0].runs())
            try await Task.sleep(for: .seconds(1))
            let idleRuns = try #require(serving[0].runs()) - before
            if announced {
                #expect(idleRuns < 5, "the idle service was scheduled \(idleRuns) times in a second")
            } else {
                #expect(idleRuns >= 6, "unannounced, the service must look at its stop every 100 ms: \(idleRuns) runs")
            }
            stopping.store(true, ordering: .relaxed)
            if announced { bus.announceStop() }
            #expect(await ended.wait(upTo: .seconds(3)), "the services did not end (announced: \(announced))")
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
