@testable import FlowKit
import Foundation
import Logging
import Synchronization
import Testing

@Suite("Lanes")
struct LaneQueueTests {
    @Test func oneLaneIsServedInOrderOneAtATimeWhileOthersGoOn() {
        var lanes = LaneQueue<Int>()
        lanes.append(1, lane: "a")
        lanes.append(2, lane: "a")
        lanes.append(10, lane: "b")
        #expect(lanes.take()! == ("a", 1))
        // `a` is in progress: its next piece waits; `b` goes on.
        #expect(lanes.take()! == ("b", 10))
        #expect(lanes.take() == nil)
        #expect(!lanes.isIdle(lane: "a") && !lanes.isIdle)
        let aHasMore = lanes.finished("a")
        #expect(aHasMore)
        #expect(lanes.take()! == ("a", 2))
        let bHasMore = lanes.finished("b")
        #expect(!bHasMore && lanes.isIdle(lane: "b"))
        let aHasMoreStill = lanes.finished("a")
        #expect(!aHasMoreStill && lanes.isIdle && lanes.waiting == 0)
    }

    /// A lane whose work blocks (a call to a stalled peer) holds up its own later work only.
    @Test func aBlockedLaneHoldsUpNoOtherLane() async throws {
        let executor = LaneExecutor(name: "test", threads: 2)
        let release = DispatchSemaphore(value: 0)
        let done = Mutex<[String]>([])
        executor.run(lane: "slow") { release.wait(); done.withLock { $0.append("slow-1") } }
        executor.run(lane: "slow") { done.withLock { $0.append("slow-2") } }
        for index in 0..<20 { executor.run(lane: "fast-\(index % 3)") { done.withLock { $0.append("fast") } } }
        let deadline = ContinuousClock.now + .seconds(5)
        while done.withLock({ $0.count }) < 20, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(done.withLock { $0 } == Array(repeating: "fast", count: 20))
        release.signal()
        executor.stop()
        #expect(done.withLock { Array($0.suffix(2)) } == ["slow-1", "slow-2"])
    }

    /// A handler running past the workers' busy limit is a hung process: the runtime is told to
    /// stop its heartbeats (and says so once); once the handler returns, nothing runs.
    @Test func aHandlerRunningPastTheLimitStopsTheHeartbeats() async throws {
        let executor = LaneExecutor(name: "test", threads: 2)
        let release = DispatchSemaphore(value: 0)
        var logged = false
        #expect(executor.longestRunning == nil)
        #expect(!executor.stopsHeartbeats(limit: .milliseconds(20), logged: &logged, logger: Logger(label: "test"), service: "vm.x"))
        executor.run(lane: "s1") { release.wait() }
        let deadline = ContinuousClock.now + .seconds(5)
        while (executor.longestRunning ?? .zero) < .milliseconds(50), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(!executor.stopsHeartbeats(limit: .seconds(30), logged: &logged, logger: Logger(label: "test"), service: "vm.x"))
        #expect(!logged)
        #expect(executor.stopsHeartbeats(limit: .milliseconds(20), logged: &logged, logger: Logger(label: "test"), service: "vm.x"))
        #expect(logged)
        release.signal()
        while executor.longestRunning != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(executor.longestRunning == nil)
        #expect(!executor.stopsHeartbeats(limit: .milliseconds(20), logged: &logged, logger: Logger(label: "test"), service: "vm.x"))
        executor.stop()
    }
}

@Suite("Lanes after a burst")
struct LaneQueueBurstTests {
    /// Ten thousand sessions' work queued at once, then done: the tables give their room back
    /// (before, a drained queue kept room for the burst, and up to a thousand sessions' names).
    @Test func aDrainedBurstLeavesNoRoomBehind() {
        var lanes = LaneQueue<Int>()
        let idle = lanes.retainedSlots
        for index in 0..<10_000 { lanes.append(index, lane: "s\(index)") }
        #expect(lanes.retainedSlots > 10_000)
        var taken: [String] = []
        while let (lane, _) = lanes.take() { taken.append(lane) }
        #expect(taken.count == 10_000 && taken.first == "s0" && taken.last == "s9999")
        for lane in taken { lanes.finished(lane) }
        #expect(lanes.isIdle)
        #expect(lanes.retainedSlots <= idle + 3 * LaneQueue<Int>.keptRoom, "\(lanes.retainedSlots) slots kept")
        // Still in order, one at a time per lane, after letting go.
        lanes.append(1, lane: "a")
        lanes.append(2, lane: "a")
        #expect(lanes.take()! == ("a", 1))
        #expect(lanes.take() == nil)
        let more = lanes.finished("a")
        #expect(more)
        #expect(lanes.take()! == ("a", 2))
    }

    /// Work that keeps coming while some lanes are slow: the ready list is compacted as it goes,
    /// so it holds about what waits, not everything that ever waited.
    @Test func aSteadyStreamKeepsTheReadyListShort() {
        var lanes = LaneQueue<Int>()
        lanes.append(0, lane: "slow")
        _ = lanes.take()  // in progress for the whole test
        for round in 0..<5_000 {
            lanes.append(round, lane: "l\(round % 7)")
            lanes.append(round, lane: "slow")
            let (lane, item) = lanes.take()!
            #expect(item == round && lane == "l\(round % 7)")
            lanes.finished(lane)
        }
        #expect(lanes.waiting == 5_000)
        #expect(lanes.retainedSlots <= 3 * LaneQueue<Int>.keptRoom, "\(lanes.retainedSlots) slots kept")
    }
}
