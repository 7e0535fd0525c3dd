import Clone
import Foundation
import Testing

/// A thread that queues writes while the agent's thread sleeps in its poll sends them itself
/// (`CloneAgentConfiguration.writersSend`): a view model's state leaves the lane that made it
/// without a hand-off to the agent's thread.
@Suite("Writes sent by the writer's thread")
struct CloneWriterSendTests {
    /// Four threads write their own key 300 times each, pausing now and then so that the agent's
    /// thread falls asleep between writes, with confirmations on (as the app's writers have them).
    /// Every write arrives, each key's in the order made, and every one is confirmed; with the
    /// option on, some were sent by the writers' threads, with it off none.
    @Test(arguments: [true, false])
    func writesFromSeveralThreadsArriveInOrderAndAreConfirmed(writersSend: Bool) async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/w/"]) {
            $0.confirmWrites = true
            // Long enough that a resend (or a replaced write let go unconfirmed) means a
            // confirmation was not taken in, not a slow machine: on one CPU shared with the app's
            // suites, 5 s was not.
            $0.confirmAfter = .seconds(30)
            $0.writersSend = writersSend
        }
        let reader = try await fixture.syncedAgent(["/w/"])
        let stream = reader.updates(prefix: "/w/")
        let threads = 4, perThread = 300
        let reading = Task { () -> [Int] in
            var last = [Int](repeating: -1, count: threads)
            var seen = 0
            for await update in stream where !update.fromSnapshot {
                let parts = update.text.split(separator: ":").compactMap { Int($0) }
                guard parts.count == 2, update.key == "/w/t\(parts[0])" else {
                    Issue.record("unexpected update \(update.key) = \(update.text)")
                    continue
                }
                #expect(parts[1] > last[parts[0]], "\(update.key): \(parts[1]) after \(last[parts[0]])")
                last[parts[0]] = parts[1]
                seen += 1
                if seen == threads * perThread { break }
            }
            return last + [seen]
        }
        let deadline = Task {
            try await Task.sleep(for: .seconds(60))
            reading.cancel()
        }
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                for index in 0..<perThread {
                    do {
                        try writer.set(key: "/w/t\(thread)", value: Array("\(thread):\(index)".utf8))
                    } catch {
                        Issue.record("set failed: \(error)")
                    }
                    // Now and then long enough for the agent's thread to sleep.
                    if index % 10 == 9 { usleep(2_000) }
                }
            }
        }
        done.wait()
        #expect(writer.settle(timeout: .seconds(20)), "not every write was confirmed: \(writer.statistics)")
        var last = await reading.value
        deadline.cancel()
        let seen = last.removeLast()
        #expect(seen == threads * perThread)
        #expect(last == [Int](repeating: perThread - 1, count: threads))
        #expect(await eventually { writer.statistics.writesConfirmed == threads * perThread }, "\(writer.statistics)")
        let statistics = writer.statistics
        if writersSend {
            #expect(statistics.outboxTakesByWriters > 0, "\(statistics)")
        } else {
            #expect(statistics.outboxTakesByWriters == 0, "\(statistics)")
        }
        #expect(statistics.writesResent == 0, "a confirmation was not taken in for 30 s: \(statistics)")
    }

    /// A write made while the agent sleeps, alone, goes at once from the writer's thread: the
    /// agent's thread makes no pass to send it. (One may meet the agent's thread awake, flushing
    /// its counters: most must not.)
    @Test func aLoneWriteLeavesFromTheWritersThread() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/lone/"]) { $0.confirmWrites = true }
        let reader = try await fixture.syncedAgent(["/lone/"])
        let before = writer.statistics
        let writes = 20
        for index in 0..<writes {
            try await Task.sleep(for: .milliseconds(50))
            try writer.set(key: "/lone/a", value: Array("\(index)".utf8))
            #expect(writer.settle(timeout: .seconds(5)))
        }
        #expect(await eventually { reader.get("/lone/a")?.value == Array("\(writes - 1)".utf8) })
        #expect(await eventually { writer.statistics.outboxTakes - before.outboxTakes == writes }, "\(writer.statistics)")
        let byWriters = writer.statistics.outboxTakesByWriters - before.outboxTakesByWriters
        #expect(byWriters >= writes / 2, "only \(byWriters) of \(writes) lone writes left from the writer's thread: \(writer.statistics)")
    }
}
