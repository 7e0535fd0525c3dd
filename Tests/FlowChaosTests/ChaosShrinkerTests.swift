import FlowChaos
import Testing

/// The shrinker finds the events a failure needs, within its budget of runs.
@Suite("Chaos shrinker")
struct ChaosShrinkerTests {
    @Test func findsTheTwoEventsAFailureNeeds() async {
        let outcome = await ChaosShrinker(budget: 40).shrink(events: 12) { kept in
            kept.contains(3) && kept.contains(7)
        }
        #expect(outcome.kept == [3, 7])
        #expect(outcome.minimal)
        #expect(outcome.steps.count <= 40)
        // Every step's record holds: what was removed is what is missing from what it kept.
        for step in outcome.steps { #expect(Set(step.removed).isDisjoint(with: step.kept)) }
        #expect(outcome.steps.last(where: \.stillFails)?.kept == [3, 7])
    }

    @Test func aFailureWithoutAnyFaultShrinksToNothingInOneRun() async {
        let outcome = await ChaosShrinker(budget: 10).shrink(events: 9) { _ in true }
        #expect(outcome.kept.isEmpty && outcome.steps.count == 1 && outcome.minimal)
    }

    @Test func aFailureThatNeedsEveryEventKeepsThemAll() async {
        let outcome = await ChaosShrinker(budget: 100).shrink(events: 5) { $0.count == 5 }
        #expect(outcome.kept == [0, 1, 2, 3, 4] && outcome.minimal)
    }

    @Test func theBudgetBoundsTheRuns() async {
        var runs = 0
        let outcome = await ChaosShrinker(budget: 3).shrink(events: 64, fails: { kept in
            runs += 1
            return kept.contains(17)
        })
        #expect(runs == 3 && outcome.steps.count == 3 && !outcome.minimal)
        #expect(outcome.kept.contains(17))
    }
}
