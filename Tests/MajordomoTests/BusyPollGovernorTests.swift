import Foundation
@testable import Majordomo
import Testing
import ZeroMQ

/// `BusyPollGovernor`: spins that keep catching the next message keep spinning on; spins that
/// catch nothing turn it off but for one probe in sixteen; probes that catch turn it back on.
@Suite("Busy poll governor")
struct BusyPollGovernorTests {
    /// Plays `bursts` bursts of traffic, each spin catching when `catches(spinIndex)` says so;
    /// returns how many bursts spun.
    private func play(_ governor: inout BusyPollGovernor, bursts: Int, catches: (Int) -> Bool) -> Int {
        var spins = 0
        for _ in 0..<bursts where governor.shouldSpin() {
            governor.record(caught: catches(spins))
            spins += 1
        }
        return spins
    }

    @Test func conversationalTrafficKeepsEverySpin() {
        var governor = BusyPollGovernor()
        #expect(play(&governor, bursts: 10_000) { _ in true } == 10_000)
        #expect(governor.enabled)
    }

    @Test func spinsThatCatchNothingTurnItOffButForProbes() {
        var governor = BusyPollGovernor()
        // The first window is spun whole, then one burst in sixteen.
        let spins = play(&governor, bursts: 32 + 1_600) { _ in false }
        #expect(!governor.enabled)
        #expect(spins == 32 + 100)
    }

    @Test func probesThatCatchTurnItBackOn() {
        var governor = BusyPollGovernor()
        _ = play(&governor, bursts: 32) { _ in false }
        #expect(!governor.enabled)
        // The traffic turns conversational: a window of eight probes (128 bursts) sees it.
        _ = play(&governor, bursts: 16 * 8) { _ in true }
        #expect(governor.enabled)
        #expect(play(&governor, bursts: 100) { _ in true } == 100)
    }

    /// One catch in eight keeps it on (4 of 32); fewer turn it off.
    @Test func theShareThatKeepsItOn() {
        var keeping = BusyPollGovernor()
        #expect(play(&keeping, bursts: 32 * 20) { $0 % 8 == 0 } == 32 * 20)
        #expect(keeping.enabled)
        var dropping = BusyPollGovernor()
        _ = play(&dropping, bursts: 32) { $0 % 11 == 0 }  // 3 of 32
        #expect(!dropping.enabled)
    }
}

@Suite("Broker busy poll, governed")
struct BrokerBusyPollGovernedTests {
    /// A client that pauses between requests and a worker that takes its time: no spin can catch
    /// the next message, so after a window of misses the broker sleeps at once and says so.
    @Test func aBrokerWhosePeersTakeTheirTimeStopsSpinning() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.busyPoll = .microseconds(50)
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let worker = fixture.worker("slow") { request in
            usleep(3_000)
            return request.body
        }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("slow", count: 1))
        let replies = try await onThread { () throws -> Int in
            let client = try fixture.client()
            var count = 0
            for index in 0..<60 {
                if try client.request(service: "slow", body: frames("\(index)")) == frames("\(index)") { count += 1 }
                usleep(3_000)
            }
            return count
        }
        #expect(replies == 60)
        #expect(try await eventually { fixture.broker.statistics.busyPollsSkipped > 0 })
        let statistics = fixture.broker.statistics
        // 120 bursts (each request and each reply): a first window of 32 spins, then probes.
        #expect(statistics.busyPollsSkipped >= 60, "\(statistics.busyPolls) spins, \(statistics.busyPollsSkipped) skipped")
        #expect(statistics.busyPolls < 60, "\(statistics.busyPolls) spins, \(statistics.busyPollsSkipped) skipped")
    }

    /// A worker that answers at once, and a window long enough to catch its reply even on a loaded
    /// machine: the broker keeps spinning after every burst, and its spins catch the next message.
    /// A burst is one drain of the socket. On a loaded machine the broker may be held up long
    /// enough for the worker's reply, and the next request, to arrive before it finds the socket
    /// empty: there may be far fewer spins than the 200 messages (48 seen in CI).
    @Test func aConversationKeepsItSpinning() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.busyPoll = .milliseconds(20)
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let worker = fixture.worker("quick")
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("quick", count: 1))
        let replies = try await onThread { () throws -> Int in
            let client = try fixture.client()
            return try (0..<100).filter { try client.request(service: "quick", body: frames("\($0)")) == frames("\($0)") }.count
        }
        #expect(replies == 100)
        try await Task.sleep(for: .milliseconds(120))
        let statistics = fixture.broker.statistics
        let summary = "\(statistics.busyPolls) spins, \(statistics.busyPollHits) caught, \(statistics.busyPollsSkipped) skipped"
        #expect(statistics.busyPollsSkipped == 0, "\(summary)")
        // Every round trip ends in a reply after which the broker spins, unless the next request
        // came in the same drain; at least a tenth of them must have been spun after.
        #expect(statistics.busyPolls >= 10, "\(summary)")
        // The spins are what keep the governor on: most of them catch the next message.
        #expect(statistics.busyPollHits * 2 >= statistics.busyPolls, "\(summary)")
    }
}
