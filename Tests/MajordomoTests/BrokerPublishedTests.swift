import Foundation
import Majordomo
import Testing
import ZeroMQ

/// What the broker publishes on its own, every `statisticsInterval`: read without waking it.
@Suite("Broker's published view")
struct BrokerPublishedTests {
    /// `lastWorkers` and `lastStatistics` show what the broker published last, without asking
    /// for a fresh copy (the host's heartbeat bridge reads `lastWorkers` four times a second): a
    /// worker shows up there within a statistics interval of registering.
    @Test func theLastPublishedWorkersComeWithoutAsking() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.statisticsInterval = .milliseconds(50)
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        #expect(fixture.broker.lastWorkers.isEmpty)
        let worker = fixture.worker("published")
        defer { worker.stop() }
        #expect(try await eventually { fixture.broker.lastWorkers.contains { $0.service == "published" } })
        #expect(fixture.broker.lastStatistics.workersPerService["published"] == 1)
    }
}
