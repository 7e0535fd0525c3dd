import Foundation
@testable import FlowHost
import FlowbusTesting
import Logging
import Testing
import ZeroMQ

/// The host's control socket answers requests, sleeps while nobody asks, and stops at once.
@Suite("Control server")
struct ControlServerTests {
    @Test func anIdleControlServerSleepsUntilAskedOrStopped() async throws {
        let context = try ZMQContext()
        let endpoint = "ipc://\(TestScratch.directory("fbctl"))/control"
        let quiet = Logger(label: "flowbus.test", factory: { _ in SwiftLogNoOpLogHandler() })
        let others = Set(ThreadRuns.threads(named: "fb-control").compactMap(\.task))
        let server = try ControlServer.start(context: context, endpoint: endpoint, logger: quiet) { request in
            Data("{\"ok\":true,\"asked\":\"\(request.command.rawValue)\"}".utf8)
        }
        let client = try ZMQSocket(context: context, type: .dealer, linger: .zero)
        try client.connect(endpoint)
        try client.send([[], Array(#"{"command": "ping"}"#.utf8)])
        let poller = ZMQPoller()
        poller.add(client)
        #expect(try poller.poll(timeout: .seconds(5)) == 1)
        let reply = try #require(try client.receiveMessage(dontWait: true))
        #expect(String(decoding: reply.last ?? [], as: UTF8.self).contains(#""asked":"ping""#))

        let threads = ThreadRuns.threads(named: "fb-control").filter { !others.contains($0.task ?? "") }
        try #require(threads.count == 1, "the control thread is named fb-control")
        let before = try #require(threads[0].runs())
        try await Task.sleep(for: .seconds(1))
        let idleRuns = try #require(threads[0].runs()) - before
        // It woke 20 times a second to look at its stop flag.
        #expect(idleRuns < 5, "the idle control server was scheduled \(idleRuns) times in a second")

        let ended = ThreadRuns.Ended()
        Thread.detachNewThread {
            server.stop()
            ended.signal()
        }
        #expect(await ended.wait(upTo: .seconds(3)), "stop() did not return")
    }
}
