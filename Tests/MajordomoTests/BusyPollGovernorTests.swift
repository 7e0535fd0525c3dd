import Foundation
@testable import Majordomo
import Testing
import ZeroMQ

/// `BusyPollGovernor`: spins that keep catching the next message soon enough keep spinning on;
/// spins that catch nothing, or catch it later than a sleep would have cost, turn it off but for
/// one probe in sixteen; probes that catch in time turn it back on.
@Suite("Busy poll governor")
struct BusyPollGovernorTests {
    /// A spin that catches at once: far less than the 15 µs a sleep is assumed to cost.
    static let quick: Int64 = 2_000
    /// A spin that catches 40 µs in, as on the virtual machine of 2026-11-28.
    static let late: Int64 = 40_000
    /// A spin that ran out: the 50 µs window.
    static let whole: Int64 = 50_000

    /// Plays `bursts` bursts of traffic; `spin(spinIndex)` says whether a spin caught a message
    /// and how long it spun. Returns how many bursts spun.
    private func play(_ governor: inout BusyPollGovernor, bursts: Int, spin: (Int) -> (Bool, Int64)) -> Int {
        var spins = 0
        for _ in 0..<bursts where governor.shouldSpin() {
            let (caught, spun) = spin(spins)
            governor.record(caught: caught, spunFor: spun)
            spins += 1
        }
        return spins
    }

    @Test func conversationalTrafficKeepsEverySpin() {
        var governor = BusyPollGovernor()
        #expect(play(&governor, bursts: 10_000) { _ in (true, Self.quick) } == 10_000)
        #expect(governor.enabled)
    }

    @Test func spinsThatCatchNothingTurnItOffButForProbes() {
        var governor = BusyPollGovernor()
        // The first window is spun whole, then one burst in sixteen.
        let spins = play(&governor, bursts: 32 + 1_600) { _ in (false, Self.whole) }
        #expect(!governor.enabled)
        #expect(spins == 32 + 100)
    }

    /// Every spin catches, but 40 µs in, to save a sleep of 15: spinning costs more CPU than it
    /// saves, and stops but for probes.
    @Test func spinsThatCatchTooLateTurnItOff() {
        var governor = BusyPollGovernor()
        let spins = play(&governor, bursts: 32 + 1_600) { _ in (true, Self.late) }
        #expect(!governor.enabled)
        #expect(spins == 32 + 100)
    }

    /// The same spins are worth it to a broker told to pay CPU for latency.
    @Test func anUnlimitedBudgetKeepsLateCatches() {
        var governor = BusyPollGovernor(budget: .infinity)
        #expect(play(&governor, bursts: 1_000) { _ in (true, Self.late) } == 1_000)
        #expect(governor.enabled)
        // Twice the sleep's cost: a catch at 25 µs pays, one at 40 does not.
        var double = BusyPollGovernor(budget: 2)
        #expect(play(&double, bursts: 320) { _ in (true, 25_000) } == 320)
        _ = play(&double, bursts: 32) { _ in (true, Self.late) }
        #expect(!double.enabled)
    }

    /// Half the spins catch at once, half run out: 26 µs spun per catch against 15 saved.
    @Test func theMissesCountAgainstTheCatches() {
        var governor = BusyPollGovernor()
        _ = play(&governor, bursts: 32) { ($0 % 2 == 0, $0 % 2 == 0 ? Self.quick : Self.whole) }
        #expect(!governor.enabled)
        // Nine in ten catching at once: (29 × 2 + 3 × 50) / 29 ≈ 7 µs per catch.
        var mostly = BusyPollGovernor()
        #expect(play(&mostly, bursts: 320) { ($0 % 10 != 0, $0 % 10 != 0 ? Self.quick : Self.whole) } == 320)
        #expect(mostly.enabled)
    }

    /// The measured sleeps set the price: where a sleep costs the broker 60 µs, catching 40 µs in pays.
    @Test func measuredSleepsSetThePrice() {
        var governor = BusyPollGovernor()
        #expect(governor.sleepCost == BusyPollGovernor.assumedSleepCost)
        for _ in 0..<100 { governor.recordSleep(cpuNanoseconds: 60_000) }
        #expect(abs(governor.sleepCost - 60_000) < 1_000)
        #expect(play(&governor, bursts: 320) { _ in (true, Self.late) } == 320)
        #expect(governor.enabled)
        // One sleep in eight is measured.
        var sampling = BusyPollGovernor()
        #expect((0..<80).filter { _ in sampling.shouldMeasureSleep() }.count == 10)
    }

    @Test func probesThatCatchTurnItBackOn() {
        var governor = BusyPollGovernor()
        _ = play(&governor, bursts: 32) { _ in (false, Self.whole) }
        #expect(!governor.enabled)
        // The traffic turns conversational: a window of eight probes (128 bursts) sees it.
        _ = play(&governor, bursts: 16 * 8) { _ in (true, Self.quick) }
        #expect(governor.enabled)
        #expect(play(&governor, bursts: 100) { _ in (true, Self.quick) } == 100)
    }

    /// One catch in eight keeps it on (4 of 32), with a budget that lets the misses be paid for;
    /// fewer turn it off whatever the budget.
    @Test func theShareThatKeepsItOn() {
        var keeping = BusyPollGovernor(budget: .infinity)
        #expect(play(&keeping, bursts: 32 * 20) { ($0 % 8 == 0, $0 % 8 == 0 ? Self.quick : Self.whole) } == 32 * 20)
        #expect(keeping.enabled)
        var dropping = BusyPollGovernor(budget: .infinity)
        _ = play(&dropping, bursts: 32) { ($0 % 11 == 0, $0 % 11 == 0 ? Self.quick : Self.whole) }  // 3 of 32
        #expect(!dropping.enabled)
    }
}

@Suite("Broker busy poll, governed")
struct BrokerBusyPollGovernedTests {
    /// `requests` round trips through a broker with `configuration`, the worker answering
    /// `workerDelay` µs after each request and the client sending the next `clientPause` µs after
    /// each reply; returns the broker's counters once `settled` holds (or after 5 s), or without
    /// it, 120 ms after the last reply.
    private func converse(
        _ configuration: BrokerConfiguration, requests: Int, workerDelay: UInt32, clientPause: UInt32,
        settled: ((BrokerStatistics) -> Bool)? = nil
    ) async throws -> BrokerStatistics {
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let worker = fixture.worker("conversation") { request in
            if workerDelay > 0 { usleep(workerDelay) }
            return request.body
        }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("conversation", count: 1))
        let replies = try await onThread { () throws -> Int in
            let client = try fixture.client()
            var count = 0
            for index in 0..<requests {
                if try client.request(service: "conversation", body: frames("\(index)")) == frames("\(index)") { count += 1 }
                if clientPause > 0 { usleep(clientPause) }
            }
            return count
        }
        #expect(replies == requests)
        if let settled {
            _ = try await eventually { settled(fixture.broker.statistics) }
        } else {
            try await Task.sleep(for: .milliseconds(120))
        }
        return fixture.broker.statistics
    }

    private static func summary(_ statistics: BrokerStatistics) -> String {
        "\(statistics.busyPolls) spins, \(statistics.busyPollHits) caught, \(statistics.busyPollsSkipped) skipped, "
            + "\(statistics.busyPollNanoseconds / 1000) µs spun, a sleep \(statistics.busyPollSleepCostNanoseconds / 1000) µs"
    }

    /// A client that pauses between requests and a worker that takes its time: no spin can catch
    /// the next message, so after a window of misses the broker sleeps at once and says so.
    @Test func aBrokerWhosePeersTakeTheirTimeStopsSpinning() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.busyPoll = .microseconds(50)
        let statistics = try await converse(configuration, requests: 60, workerDelay: 3_000, clientPause: 3_000) { $0.busyPollsSkipped >= 60 }
        // 120 bursts (each request and each reply): a first window of 32 spins, then probes.
        #expect(statistics.busyPollsSkipped >= 60, "\(Self.summary(statistics))")
        #expect(statistics.busyPolls < 60, "\(Self.summary(statistics))")
    }

    /// A worker that answers at once, and a window long enough to catch its reply even on a loaded
    /// machine: the broker keeps spinning after every burst, and its spins catch the next message.
    /// A burst is one drain of the socket. On a loaded machine the broker may be held up long
    /// enough for the worker's reply, and the next request, to arrive before it finds the socket
    /// empty: there may be far fewer spins than the 200 messages (48 seen in CI).
    /// The budget is unlimited: on a loaded machine the spins may catch later than a sleep costs,
    /// which is the next test's case.
    @Test func aConversationKeepsItSpinning() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.busyPoll = .milliseconds(20)
        configuration.busyPollBudget = .infinity
        let statistics = try await converse(configuration, requests: 100, workerDelay: 0, clientPause: 0)
        #expect(statistics.busyPollsSkipped == 0, "\(Self.summary(statistics))")
        // Every round trip ends in a reply after which the broker spins, unless the next request
        // came in the same drain; at least a tenth of them must have been spun after.
        #expect(statistics.busyPolls >= 10, "\(Self.summary(statistics))")
        // The spins are what keep the governor on: most of them catch the next message.
        #expect(statistics.busyPollHits * 2 >= statistics.busyPolls, "\(Self.summary(statistics))")
    }

    /// A worker that answers 2 ms after each request, a client that sends the next one 2 ms after
    /// each reply, and a window of 20 ms that catches them all: each catch spun 2 ms to save a
    /// sleep that costs the broker microseconds, so with the default budget the broker stops
    /// spinning, measures its sleeps, and counts what it spun.
    @Test func spinsThatCatchTooLateStopWithTheDefaultBudget() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.busyPoll = .milliseconds(20)
        let statistics = try await converse(configuration, requests: 80, workerDelay: 2_000, clientPause: 2_000) {
            $0.busyPollsSkipped >= 80 && $0.busyPollSleepCostNanoseconds > 0
        }
        // 160 bursts: a first window of 32 spins, then one probe in sixteen.
        #expect(statistics.busyPollsSkipped >= 80, "\(Self.summary(statistics))")
        #expect(statistics.busyPolls < 60, "\(Self.summary(statistics))")
        #expect(statistics.busyPollSleepCostNanoseconds > 0, "\(Self.summary(statistics))")
        // The messages were caught, about 2 ms in each: what turned it off is their cost.
        #expect(statistics.busyPollHits * 4 >= statistics.busyPolls, "\(Self.summary(statistics))")
        #expect(statistics.busyPollNanoseconds >= statistics.busyPollHits * 1_000_000, "\(Self.summary(statistics))")
    }
}
