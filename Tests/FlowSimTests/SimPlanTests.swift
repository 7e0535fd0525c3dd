import FlowClient
@testable import FlowSim
import FlowbusTesting
import Foundation
import MessagePath
import Testing

@Suite("Sim plans, schedules and thresholds")
struct SimPlanTests {
    static let journey = "- open: {}\n- expect: {screen: signin}\n- send: {action: logIn, fields: {email: a@b.c}}\n- expect: {screen: home}\n- close\n"

    /// A plan whose journeys are two small scripts written to a temporary folder.
    static func plan(_ body: String, seed: UInt64? = nil) throws -> SimPlan {
        let directory = TestScratch.directory("simplan")
        try journey.write(toFile: directory + "/a.yaml", atomically: true, encoding: .utf8)
        try journey.write(toFile: directory + "/b.yaml", atomically: true, encoding: .utf8)
        return try SimPlan.parse(yaml: body, directory: directory, seed: seed)
    }

    static let mixed = "name: t\nseed: 5\njourneys:\n  - {script: a.yaml, weight: 3}\n  - b.yaml\nthink: {exponential: 2s}\nusers: 50\nduration: 10s\n"

    @Test func readsEveryPart() throws {
        let plan = try Self.plan(Self.mixed + "journey-limit: 9\ndata:\n  - {email: x@y.z}\nthresholds:\n  - p99(logIn->home) < 50ms\n  - errors < 0.1%\n")
        #expect(plan.name == "t" && plan.seed == 5 && plan.journeys.map(\.name) == ["a", "b"] && plan.journeys.map(\.weight) == [3, 1])
        #expect(plan.think == .exponential(mean: .seconds(2)) && plan.load == .closed([LoadModel.Stage(target: 50)]))
        #expect(plan.duration == .seconds(10) && plan.journeyLimit == 9 && plan.data == [["email": "x@y.z"]])
        #expect(plan.thresholds.map(\.metric) == ["logIn→home", nil])
        #expect(plan.thresholds[1].limit == 0.001)
    }

    @Test(arguments: [
        ("users: 2\nrate: 3\n", "give only one of users, rate or stages"),
        ("users: 0\n", "`users` is a whole number above 0"),
        ("users: 2\nthink: {gamma: 1s}\n", "`think` is one of"),
        ("users: 2\nthresholds:\n  - p99(x) less than 3ms\n", "has no comparison"),
        ("users: 2\nthresholds:\n  - p101(x) < 3ms\n", "is not p50, p90, p99"),
        ("users: 2\nthresholds:\n  - errors < 3\n", "is not a share"),
        ("users: 2\nflavour: sour\n", "unknown entry `flavour`"),
        ("stages:\n  - {users: 2}\n  - {rate: 3}\n", "not both"),
    ])
    func refusesWhatItCannotPlay(extra: String, problem: String) throws {
        #expect {
            _ = try Self.plan("journeys: [a.yaml]\n" + extra)
        } throws: { error in
            "\(error)".contains(problem)
        }
    }

    @Test func aJourneyThatAttachesIsRefused() throws {
        let directory = TestScratch.directory("simplan")
        try "- attach: abc\n".write(toFile: directory + "/x.yaml", atomically: true, encoding: .utf8)
        #expect(throws: SimPlanError.self) { _ = try SimPlan.parse(yaml: "journeys: [x.yaml]\nusers: 1\n", directory: directory) }
    }

    @Test func theSameSeedGivesTheSameScheduleAndAnotherSeedAnother() throws {
        let first = try Self.plan(Self.mixed), again = try Self.plan(Self.mixed), other = try Self.plan(Self.mixed, seed: 6)
        #expect(SimSchedule.hash(first, users: 50) == SimSchedule.hash(again, users: 50))
        #expect(SimSchedule.hash(first, users: 50) != SimSchedule.hash(other, users: 50))
        var one = UserSchedule(plan: first, user: 3), two = UserSchedule(plan: again, user: 3), neighbour = UserSchedule(plan: first, user: 4)
        let turns = (0..<20).map { _ in one.next() }
        #expect(turns == (0..<20).map { _ in two.next() })
        #expect(turns != (0..<20).map { _ in neighbour.next() })
        // The pause comes before the send only (not the first step, nor an expect).
        #expect(turns.allSatisfy { $0.pauses.count == 5 && $0.pauses[0] == .zero && $0.pauses[1] == .zero && $0.pauses[2] > .zero && $0.pauses[3] == .zero })
    }

    /// A user that gave up starts over with the setup; its pauses there come from a stream of
    /// their own, so the journeys the schedule hash covers are drawn as they would have been.
    @Test func aSetupPlayedAgainLeavesTheScheduleAsDrawn() throws {
        let plan = try Self.plan("name: t\nseed: 5\nsetup: a.yaml\njourneys:\n  - {script: b.yaml}\nthink: {exponential: 2s}\nusers: 5\nduration: 10s\n")
        var plain = UserSchedule(plan: plan, user: 2), restarted = UserSchedule(plan: plan, user: 2)
        _ = plain.setupPauses()
        _ = restarted.setupPauses()
        var again: [[Duration]] = []
        var turns: [UserSchedule.Turn] = []
        for count in 1...6 {
            turns.append(restarted.next())
            again.append(restarted.setupPauses(restartingAfter: count))
        }
        #expect(turns == (1...6).map { _ in plain.next() })
        #expect(again == (1...6).map { restarted.setupPauses(restartingAfter: $0) }, "the same user and count give the same pauses")
        #expect(Set(again.map { $0.map { $0 / .microseconds(1) } }).count == 6, "each restart draws its own")
        #expect(again.allSatisfy { $0.count == 5 && $0[2] > .zero })
    }

    @Test func aJourneyThatOpensItsOwnSessionIsKnown() throws {
        let own = try DriveScript.parse(Self.journey)
        let onTheUsers = try DriveScript.parse("- send: {action: select, fields: {item: movie:19}}\n- expect: {screen: details}\n")
        let attaching = try DriveScript.parse("- attach: abc\n- expect: {screen: home}\n")
        #expect(SimRunner.opensItsOwnSession(own) && SimRunner.opensItsOwnSession(attaching))
        #expect(!SimRunner.opensItsOwnSession(onTheUsers))
    }

    @Test func weightsAreFollowed() throws {
        let plan = try Self.plan(Self.mixed)
        var schedule = UserSchedule(plan: plan, user: 0)
        let picks = (0..<10_000).map { _ in schedule.next().journey }
        let share = Double(picks.filter { $0 == 0 }.count) / 10_000
        #expect(abs(share - 0.75) < 0.02, "weight 3 of 4 picked \(share)")
    }

    @Test(arguments: [
        ThinkTime.constant(.seconds(1)), .uniform(.seconds(1), .seconds(3)), .exponential(mean: .seconds(5)),
        .logNormal(median: .seconds(2), sigma: 0.5),
    ])
    func pausesAverageTheirMean(think: ThinkTime) {
        var random = SplitMix64(seed: 42)
        let draws = (0..<40_000).map { _ in think.draw(&random) / .seconds(1) }
        let mean = draws.reduce(0, +) / Double(draws.count)
        let expected = think.mean / .seconds(1)
        #expect(abs(mean - expected) / expected < 0.03, "\(think): mean \(mean), expected \(expected)")
        #expect(draws.allSatisfy { $0 >= 0 })
    }

    @Test func stagesRampLinearlyThenHold() {
        let load = LoadModel.closed([LoadModel.Stage(target: 100, over: .seconds(10), hold: .seconds(5)), LoadModel.Stage(target: 20, over: .seconds(4))])
        #expect(load.target(at: .seconds(5)) == 50)
        #expect(load.target(at: .seconds(12)) == 100)
        #expect(load.target(at: .seconds(17)) == 60)
        #expect(load.target(at: .seconds(60)) == 20)
        #expect(load.length == .seconds(19) && load.peak == 100)
    }

    @Test func arrivalsComeAtTheirRate() throws {
        let plan = try Self.plan("journeys: [a.yaml]\nrate: 50\nduration: 40s\n")
        var clock = ArrivalClock(plan: plan)
        var count = 0
        while clock.next() != nil { count += 1 }
        // 2,000 expected; a Poisson count's standard deviation is about 45.
        #expect(abs(count - 2000) < 200, "\(count) arrivals")
    }

    @Test func thresholdsAreJudgedOnTheMergedFigures() throws {
        let metrics = SimMetrics()
        for millis in 1...100 { metrics.record(.step, "logIn→home", .milliseconds(millis)) }
        metrics.requestSent()
        metrics.requestSent()
        metrics.error("vm.x refused", example: "e", request: true)
        let plan = try Self.plan("journeys: [a.yaml]\nusers: 1\nthresholds:\n  - p99(logIn→home) < 50ms\n  - p50(logIn→home) <= 51ms\n  - errors < 60%\n  - max(nowhere) < 1s\n")
        let result = metrics.result(plan: plan, runTag: "t", scheduleHash: "h", elapsed: .seconds(1), usersStarted: 1,
                                    simulator: .init(cpuSeconds: 0, cpuMicrosecondsPerIntent: 0, residentBytes: 0, residentBytesAtStart: 0, bytesPerUser: 0, peakUsers: 1, lanes: 1))
        #expect(result.thresholds.map(\.passed) == [false, true, true, false])
        #expect(result.thresholds[0].detail.contains("was 99"), "\(result.thresholds[0].detail)")
        #expect(result.thresholds[3].detail.contains("nothing was measured"))
        #expect(!result.passed && result.errorShare == 0.5)
    }
}
