import Foundation
import Majordomo
import Synchronization
import Testing
import ZeroMQ

@Suite("Worker lanes")
struct WorkerLanesTests {
    /// Each lane is a whole MDP worker: the broker lists one worker per lane, and pipelined
    /// requests are spread over them, each lane holding one at a time.
    @Test func lanesServeManyRequestsInFlight() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let stopping = Atomic<Bool>(false)
        let served = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        let context = fixture.context, endpoint = fixture.endpoint
        Thread.detachNewThread {
            defer { done.signal() }
            guard let lanes = try? MajordomoWorkerLanes(
                context: context, endpoint: endpoint, service: "lanes", count: 8,
                configuration: fastWorkerConfiguration(routingID: "lanes/77/1"), logger: quietLogger) else { return }
            try? lanes.run(until: { stopping.load(ordering: .relaxed) }) { request in
                served.add(1, ordering: .relaxed)
                return request.body
            }
        }
        #expect(try await fixture.awaitWorkers("lanes", count: 8))
        let ids = Set(fixture.broker.workers.filter { $0.service == "lanes" }.map(\.routingID))
        // `<plugin>/<pid>/<n>` counts on per lane, so the host ties every lane to its process.
        #expect(ids == Set((1...8).map { "lanes/77/\($0)" }))

        let answered = try await onThread { () -> Int in
            let client = try fixture.client(timeout: .seconds(5))
            for index in 0..<400 { try client.send(service: "lanes", body: [Array("\(index)".utf8)]) }
            var bodies = Set<String>()
            while bodies.count < 400, let reply = try client.receive(timeout: .seconds(5)) {
                bodies.insert(text(reply.body[0]))
            }
            return bodies.count
        }
        #expect(answered == 400)
        #expect(served.load(ordering: .relaxed) == 400)
        let perWorker = fixture.broker.workers.filter { $0.service == "lanes" }.map(\.requestsServed)
        #expect(perWorker.filter { $0 > 0 }.count > 1, "requests should spread over the lanes: \(perWorker)")

        stopping.store(true, ordering: .relaxed)
        done.wait()
        #expect(try await fixture.awaitWorkers("lanes", count: 0))
    }
}
