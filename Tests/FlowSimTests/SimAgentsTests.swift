import FlowClient
@testable import FlowSim
import Foundation
import Testing

/// What a run across machines rests on: an agent's measurements travel as JSON and merge exactly,
/// and a plan travels whole (its journeys' texts with it), giving the agent the same schedule.
@Suite("Sim across machines: merging and the plan on the wire")
struct SimAgentsTests {
    static func simulator() -> SimResult.SimulatorFigures {
        .init(cpuSeconds: 0, cpuMicrosecondsPerIntent: 0, residentBytes: 0, residentBytesAtStart: 0, bytesPerUser: 0, peakUsers: 1, lanes: 1)
    }

    /// Random samples each time, and a few sizes (one sample, a handful, thousands), so the
    /// histograms' edges (smallest, largest, a bucket shared by both agents) are exercised.
    @Test(arguments: [1, 2, 7, 20_000, 20_000, 20_000, 20_000, 20_000])
    func twoAgentsMergedGiveTheFiguresOfOneThatMeasuredEverything(samples: Int) throws {
        let start = ContinuousClock.now
        let whole = SimMetrics(start: start)
        let agents = [SimMetrics(start: start), SimMetrics(start: start)]
        var generator = SystemRandomNumberGenerator()
        for index in 0..<samples {
            // A long tail: most steps a few ms, some seconds, so high percentiles mean something.
            let micros = index % 100 == 0 ? Int64.random(in: 500_000...9_000_000, using: &generator) : Int64.random(in: 200...20_000, using: &generator)
            let at = start + .milliseconds(Int64(index % 5) * 1000 + 1)
            let name = index % 3 == 0 ? "select→details" : "logIn→home"
            for metrics in [whole, agents[index % 2]] {
                metrics.record(.step, name, .microseconds(micros), at: at)
                metrics.record(.intent, "intent x", .microseconds(micros / 2), at: at)
                metrics.requestSent()
            }
            if index % 1000 == 0 {
                for metrics in [whole, agents[index % 2]] { metrics.error("vm.x refused", example: "e\(index)", request: true, at: at) }
            }
        }
        for metrics in [whole, agents[0]] { metrics.journeyEnded(.completed, at: start + .milliseconds(10)) }
        let merged = SimMetrics(start: start)
        for agent in agents {
            // Over the wire and back, as an agent's report travels.
            let data = try JSONEncoder().encode(agent.snapshot())
            #expect(data.count < 200_000, "an agent's report must fit a bus message: \(data.count) bytes")
            merged.merge(try JSONDecoder().decode(SimMetrics.Snapshot.self, from: data))
        }
        let plan = try SimPlanTests.plan("journeys: [a.yaml]\nusers: 2\n")
        let expected = whole.result(plan: plan, runTag: "t", scheduleHash: "h", elapsed: .seconds(5), usersStarted: 2, simulator: Self.simulator())
        let got = merged.result(plan: plan, runTag: "t", scheduleHash: "h", elapsed: .seconds(5), usersStarted: 2, simulator: Self.simulator())
        #expect(got.metrics.map(\.name) == expected.metrics.map(\.name))
        for (mine, theirs) in zip(got.metrics, expected.metrics) {
            #expect(mine.count == theirs.count, "\(mine.name)")
            #expect([mine.p50, mine.p90, mine.p99, mine.p999, mine.max] == [theirs.p50, theirs.p90, theirs.p99, theirs.p999, theirs.max], "\(mine.name)")
            #expect(mine.curve == theirs.curve, "\(mine.name)")
        }
        #expect(got.requests == expected.requests && got.failedRequests == expected.failedRequests && got.journeysCompleted == 1)
        #expect(got.errors.map(\.count) == expected.errors.map(\.count))
        #expect(got.timeline.map(\.intents) == expected.timeline.map(\.intents))
        #expect(got.timeline.map(\.p99) == expected.timeline.map(\.p99))
    }

    /// A journey that timed out is not told as failed while the run goes, as the summary at its
    /// end tells them apart (a sim-scale run's progress read "117 failed", its summary "0 failed,
    /// 117 timed out"); an agent's progress carries both, and an older agent's, without the
    /// timed out, still reads.
    @Test func progressTellsTimedOutJourneysFromFailedOnes() throws {
        let start = ContinuousClock.now
        let metrics = SimMetrics(start: start)
        metrics.journeyEnded(.completed, at: start)
        metrics.journeyEnded(.completed, at: start)
        metrics.journeyEnded(.failed, at: start)
        for _ in 0..<3 { metrics.journeyEnded(.timedOut, at: start) }
        let figures = metrics.progress(at: start)
        #expect(figures.journeysCompleted == 2 && figures.journeysFailed == 1 && figures.journeysTimedOut == 3)
        #expect(SimMetrics.journeys(completed: 2, failed: 1, timedOut: 3) == "journeys 2 ok, 1 failed, 3 timed out")

        let sent = SimControl.Progress(
            index: 0, running: 5, intentsLastSecond: 9, errors: 4, journeysCompleted: 2, journeysFailed: 1, journeysTimedOut: 3, stepP99: 1.5)
        #expect(try SimControl.decode(SimControl.Progress.self, SimControl.encode(sent)) == sent)
        let older = Array(#"{"errors":4,"index":0,"intentsLastSecond":9,"journeysCompleted":2,"journeysFailed":4,"running":5,"stepP99":1.5}"#.utf8)
        let read = try SimControl.decode(SimControl.Progress.self, older)
        #expect(read.journeysFailed == 4)
        #expect(read.journeysTimedOut == Int?.none)
    }

    /// The summary's "the app kept up" line names the slowest step and the mean pause it was held
    /// against; a run that measured no step read "…p99 was 0.0 ms(null)".
    @Test func theKeptUpLineNamesTheSlowestStepAndThePause() throws {
        let start = ContinuousClock.now
        let plan = try SimPlanTests.plan("journeys: [a.yaml]\nusers: 2\nthink: {exponential: 300ms}\n")
        let idle = SimMetrics(start: start)
        let none = idle.result(plan: plan, runTag: "t", scheduleHash: "h", elapsed: .seconds(1), usersStarted: 2, simulator: Self.simulator())
        #expect(none.keptUpReason == "0.00% of requests failed; no step was measured", "\(none.keptUpReason)")
        let metrics = SimMetrics(start: start)
        metrics.record(.step, "logIn→home", .milliseconds(12), at: start)
        metrics.journeyEnded(.completed, at: start)
        let result = metrics.result(plan: plan, runTag: "t", scheduleHash: "h", elapsed: .seconds(1), usersStarted: 2, simulator: Self.simulator())
        #expect(result.keptUp)
        #expect(result.keptUpReason == "0.00% of requests failed; the slowest step's p99 was 12.0 ms, below the mean pause of 300 ms", "\(result.keptUpReason)")
    }

    @Test func aPlanSentWithItsScriptsReadsTheSameAndGivesTheSameSchedule() throws {
        let plan = try SimPlanTests.plan("name: t\nseed: 9\nsetup: b.yaml\njourneys:\n  - {script: a.yaml, weight: 2}\n  - b.yaml\nusers: 7\nthink: {exponential: 1s}\n")
        #expect(plan.scripts.keys.sorted() == ["a.yaml", "b.yaml"])
        let sent = try SimPlan.parse(yaml: plan.text, directory: "/nowhere", seed: plan.seed, scripts: plan.scripts)
        #expect(sent.journeys.map(\.name) == plan.journeys.map(\.name))
        #expect(sent.journeys.map { $0.script.steps.count } == plan.journeys.map { $0.script.steps.count })
        #expect(sent.setup?.steps.count == plan.setup?.steps.count)
        #expect(SimSchedule.hash(sent, users: 7) == SimSchedule.hash(plan, users: 7))
        for user in 0..<7 {
            var mine = UserSchedule(plan: sent, user: user), theirs = UserSchedule(plan: plan, user: user)
            for _ in 0..<5 { #expect(mine.next() == theirs.next()) }
        }
    }

    @Test func aPlanWhoseScriptWasNotSentSaysSo() throws {
        #expect(throws: SimPlanError.self) {
            try SimPlan.parse(yaml: "journeys: [a.yaml, c.yaml]\nusers: 1\n", directory: "/", scripts: ["a.yaml": SimPlanTests.journey])
        }
        do {
            _ = try SimPlan.parse(yaml: "journeys: [a.yaml, c.yaml]\nusers: 1\n", directory: "/", scripts: ["a.yaml": SimPlanTests.journey])
        } catch {
            #expect(error.description.contains("c.yaml") && error.description.contains("coordinator did not send it"), "\(error)")
        }
    }
}

@Suite("Sim coordinator: who joins")
struct SimJoinTests {
    @Test func aJoinSentAgainKeepsItsPlaceAndOneTooManyOrTooLateIsRefused() throws {
        var joined: [String: SimCoordinator.Agent] = [:]
        func join(_ id: String, started: Bool = false) -> Result<SimControl.Joined, SimControlError> {
            SimCoordinator.join(SimControl.Join(agent: id, name: "m-\(id)"), run: "r", agents: 2, joined: &joined, started: started)
        }
        #expect(try join("a").get().index == 0)
        #expect(try join("a").get().index == 0, "MDP sends a join again when its reply is late")
        #expect(try join("b").get().index == 1)
        #expect(try join("b").get().of == 2)
        guard case .failure(let full) = join("c") else { Issue.record("a third agent joined a run of two"); return }
        #expect(full.isRefusal && full.description.contains("has its 2 agents already"))
        joined = [:]
        #expect(try join("a").get().index == 0)
        guard case .failure(let late) = join("d", started: true) else { Issue.record("an agent joined after the start"); return }
        #expect(late.isRefusal && late.description.contains("started without you"))
        #expect(try join("a", started: true).get().index == 0, "a joined agent asking again after the start keeps its place")
    }
}
