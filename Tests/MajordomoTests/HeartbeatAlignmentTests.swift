import Foundation
@testable import Majordomo
import Testing
import ZeroMQ

/// Idle heartbeats travel together: the broker sends its idle workers' heartbeats in one tick,
/// and a worker answers one at once when its own is due within half an interval, so an idle bus
/// wakes the broker once per interval for all its workers rather than once per worker.
@Suite("Heartbeats together")
struct HeartbeatAlignmentTests {
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// A broker's HEARTBEAT that comes when the worker's own is due within half an interval is
    /// answered at once; one that comes earlier is not (no heartbeat ping-pong).
    @Test func aWorkerAnswersAHeartbeatWhenItsOwnIsNearlyDue() async throws {
        let context = try ZMQContext()
        let endpoint = ipcEndpoint()
        let (early, late) = try await onThread { () throws -> (Duration?, Duration?) in
            let router = try ZMQSocket(context: context, type: .router, linger: .zero)
            try router.bind(endpoint)
            var configuration = fastWorkerConfiguration(routingID: "paired/1/1")
            configuration.heartbeatInterval = .seconds(2)
            let worker = WorkerRunner(context: context, endpoint: endpoint, service: "paired", configuration: configuration)
            defer { worker.stop() }
            try router.setReceiveTimeout(.seconds(5))
            guard let ready = try router.receiveMessage() else { return (nil, nil) }
            let readyAt = ContinuousClock.now
            let (peer, _) = try MDPCommand.decode(routed: ready)
            /// Sends a HEARTBEAT `after` READY; returns how long the worker took to send one back
            /// (nil: not within `wait`).
            func heartbeat(after: Duration, wait: Duration) throws -> Duration? {
                Thread.sleep(forTimeInterval: Self.seconds(readyAt + after - ContinuousClock.now))
                try router.send(prefix: [peer], MDPCommand.heartbeat.frames)
                let sent = ContinuousClock.now
                try router.setReceiveTimeout(wait)
                while let message = try router.receiveMessage() {
                    if case .heartbeat = try MDPCommand.decode(routed: message).1 { return ContinuousClock.now - sent }
                }
                return nil
            }
            // Its own is due 2 s after READY: 1.8 s away, it is not answered (within 0.5 s)...
            let early = try heartbeat(after: .milliseconds(200), wait: .milliseconds(500))
            // ...0.7 s away, it is answered at once, not 0.7 s later when the worker's timer fires.
            let late = try heartbeat(after: .milliseconds(1_300), wait: .milliseconds(1_500))
            return (early, late)
        }
        #expect(early == nil, "answered a heartbeat with its own 1.8 s away, after \(String(describing: early))")
        let answered = try #require(late, "no heartbeat at all after the broker's")
        #expect(answered < .milliseconds(400), "answered after \(answered): its own timer's, not the broker's heartbeat")
    }

    /// Two idle workers that registered 200 ms apart get their heartbeats from the broker in the
    /// same tick once it has sent one of them a heartbeat (ticks are 50 ms apart here; without the
    /// change they stay 200 ms apart).
    @Test func theBrokerHeartbeatsItsIdleWorkersTogether() async throws {
        let fixture = try BrokerFixture(configuration: fastBrokerConfiguration(heartbeat: .milliseconds(400), liveness: 5))
        defer { fixture.broker.stop() }
        let context = fixture.context, endpoint = fixture.endpoint
        let gaps = try await onThread { () throws -> [Duration] in
            let first = try RawPeer(context: context, endpoint: endpoint, routingID: "together/1/1")
            try first.send(.ready(service: Array("together".utf8)))
            Thread.sleep(forTimeInterval: 0.2)
            let second = try RawPeer(context: context, endpoint: endpoint, routingID: "together/1/2")
            try second.send(.ready(service: Array("together".utf8)))
            // Both answer every heartbeat at once, as a worker whose own is due does; the times
            // their heartbeats came are noted, both read on this one thread.
            let poller = ZMQPoller()
            poller.add(first.socket)
            poller.add(second.socket)
            var came: [[ContinuousClock.Instant]] = [[], []]
            let end = ContinuousClock.now + .seconds(2)
            while ContinuousClock.now < end {
                guard try poller.poll(timeout: end - ContinuousClock.now) > 0 else { continue }
                let now = ContinuousClock.now
                for (index, peer) in [first, second].enumerated() {
                    while let frames = try peer.socket.receiveMessage(dontWait: true) {
                        guard case .heartbeat = try MDPCommand.decode(frames, direction: .fromBroker) else { continue }
                        came[index].append(now)
                        try peer.send(.heartbeat)
                    }
                }
            }
            // For each of the second's heartbeats in the last second, how far the first's
            // nearest one was.
            let recent = came[1].filter { end - $0 < .seconds(1) }
            return recent.map { moment in came[0].map { abs(Self.seconds($0 - moment)) }.min().map { .seconds($0) } ?? .seconds(10) }
        }
        #expect(!gaps.isEmpty, "no heartbeats in the last second")
        #expect(gaps.allSatisfy { $0 < .milliseconds(40) }, "heartbeats apart by \(gaps)")
    }
}
