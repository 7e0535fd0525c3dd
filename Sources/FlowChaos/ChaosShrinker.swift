/// Finds a smaller set of a failing plan's events that still fails: tries the run without a
/// chunk of the events at a time, keeps every cut after which it still fails, and halves the
/// chunks until single events (delta debugging, ddmin's "complement" half), within a budget of
/// runs. Each try is a whole run of the journeys, so the budget is what bounds the time.
public struct ChaosShrinker: Sendable {
    /// One try: which events were left out, which were kept, and whether it still failed.
    public struct Step: Sendable, Equatable {
        public var run: Int
        public var removed: [Int]
        public var kept: [Int]
        public var stillFails: Bool
    }

    public struct Outcome: Sendable, Equatable {
        /// The events of the smallest plan found that still fails, in plan order.
        public var kept: [Int]
        public var steps: [Step]
        /// True when every single event was tried out: no one event can be left out.
        public var minimal: Bool
    }

    public let budget: Int

    public init(budget: Int) {
        self.budget = max(1, budget)
    }

    /// `fails(kept)`: plays the plan with only those events and says whether the run still fails
    /// as the first one did. `step` is told of each try as it ends.
    public func shrink(
        events count: Int, fails: ([Int]) async throws -> Bool, step: (Step) -> Void = { _ in }
    ) async rethrows -> Outcome {
        var kept = Array(0..<count)
        var steps: [Step] = []
        var chunk = max(1, count)
        var minimal = false
        while steps.count < budget, !kept.isEmpty {
            var start = 0
            var cut = false
            while start < kept.count, steps.count < budget {
                let removed = Array(kept[start..<min(start + chunk, kept.count)])
                let candidate = Array(kept[..<start]) + Array(kept[min(start + chunk, kept.count)...])
                let stillFails = try await fails(candidate)
                let made = Step(run: steps.count + 1, removed: removed, kept: candidate, stillFails: stillFails)
                steps.append(made)
                step(made)
                if stillFails {
                    kept = candidate
                    cut = true
                } else {
                    start += chunk
                }
            }
            if chunk == 1 {
                if start >= kept.count && !cut { minimal = true }
                if !cut || steps.count >= budget { break }
            }
            chunk = max(1, chunk / 2)
            if chunk > kept.count { chunk = max(1, kept.count) }
        }
        return Outcome(kept: kept, steps: steps, minimal: minimal || kept.isEmpty)
    }
}
