import Foundation
import Majordomo
import Synchronization
import Testing
import ZeroMQ

/// The broker's observer: it sees the requests and replies of the services it names (with the
/// worker that served them), nothing of the others, and costs the others nothing measurable.
@Suite struct BrokerObserverTests {
    final class Seen: Sendable {
        let observations = Mutex<[BrokerObservation]>([])
        var observer: BrokerObserver {
            BrokerObserver(servicePrefixes: ["vm."]) { [self] observation in observations.withLock { $0.append(observation) } }
        }
    }

    @Test func seesRequestsAndRepliesOfItsServicesOnly() async throws {
        let seen = Seen()
        var configuration = fastBrokerConfiguration()
        configuration.observer = seen.observer
        let fixture = try BrokerFixture(configuration: configuration)
        let worker = fixture.worker("vm.signin", configuration: fastWorkerConfiguration(routingID: "vm-signin/1/0")) { _ in frames("ok") }
        let echo = fixture.worker("flowbus.echo")
        defer { worker.stop(); echo.stop() }
        let replies = try await onThread {
            let client = try fixture.client()
            return [try client.request(service: "vm.signin", body: frames("logIn")), try client.request(service: "flowbus.echo", body: frames("hi"))]
        }
        #expect(replies.map { $0.map(text) } == [["ok"], ["hi"]])
        let observations = seen.observations.withLock { $0 }
        #expect(observations.map(\.kind) == [.request, .reply])
        #expect(observations.allSatisfy { text($0.service) == "vm.signin" })
        #expect(text(observations[0].body) == "logIn" && text(observations[1].body) == "ok")
        #expect(text(observations[1].worker) == "vm-signin/1/0")
        #expect(observations[0].client == observations[1].client)
        #expect(observations[0].atUnixNanos <= observations[1].atUnixNanos)
    }

    /// Echo round trips with no observer, and with one that watches other services (as the host's
    /// history does while benchmarks use flowbus.echo), and with one that watches echo itself.
    @Test func unobservedServicesKeepTheirThroughput() async throws {
        func roundTrips(_ observer: BrokerObserver?) async throws -> Double {
            var configuration = fastBrokerConfiguration()
            configuration.observer = observer
            let fixture = try BrokerFixture(configuration: configuration)
            let echo = fixture.worker("flowbus.echo")
            defer { echo.stop() }
            return try await onThread {
                let client = try fixture.client()
                _ = try client.request(service: "flowbus.echo", body: frames("warm-up"))
                let total = 20_000
                let window = 200
                let started = ContinuousClock.now
                var sent = 0
                var received = 0
                while received < total {
                    while sent < total, sent - received < window {
                        try client.send(service: "flowbus.echo", body: frames("x"))
                        sent += 1
                    }
                    guard try client.receive(timeout: .seconds(5)) != nil else { break }
                    received += 1
                }
                let elapsed = ContinuousClock.now - started
                return Double(received) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            }
        }
        let counter = Atomic<Int>(0)
        let none = try await roundTrips(nil)
        let others = try await roundTrips(BrokerObserver(servicePrefixes: ["vm.", "coord."]) { _ in counter.add(1, ordering: .relaxed) })
        let watched = try await roundTrips(BrokerObserver(servicePrefixes: ["flowbus."]) { _ in counter.add(1, ordering: .relaxed) })
        print("broker echo round trips/s: no observer \(Int(none)), observer of vm./coord. \(Int(others)), observer of echo \(Int(watched))")
        #expect(counter.load(ordering: .relaxed) == 2 * 20_001, "only the watched run was observed")
        #expect(none > 0 && others > 0 && watched > 0)
    }
}
