import FlowClient
import Foundation

/// What `flowbus sim` plays: which journeys, how often, how many users, how fast, for how long,
/// and what counts as a pass. Read from YAML by `SimPlan.parse(yaml:directory:)`.
public struct SimPlan: Sendable {
    public var name: String
    public var seed: UInt64
    /// The journeys a user picks from, each with its weight.
    public var journeys: [WeightedJourney]
    /// Played once by each user before its first journey (e.g. to make its account); its saved
    /// variables stay for the user's later journeys.
    public var setup: DriveScript?
    /// The pause before each step that acts (send, call): a person reading the screen.
    public var think: ThinkTime
    public var load: LoadModel
    /// How long the run lasts; with `journeyLimit` it stops at whichever comes first.
    public var duration: Duration
    /// Journeys to complete, across all users, before the run stops (nil: no limit).
    public var journeyLimit: Int?
    /// Per-user variables: user `i` gets entry `i % count` (e.g. an account to sign in with).
    public var data: [[String: String]]
    public var thresholds: [Threshold]
    /// The longest any step waits (a script's own step timeouts are raised to at least this).
    public var stepTimeout: Duration
    /// The plan's text, which with the seed names the run's schedule (`SimSchedule.hash`).
    public var text: String
    /// The journeys' texts by the path the plan names them with: with `text`, all an agent on
    /// another machine needs to play the same plan.
    public var scripts: [String: String] = [:]

    public struct WeightedJourney: Sendable {
        public var name: String
        public var script: DriveScript
        public var weight: Double
    }
}

/// How many simulated users there are over time.
public enum LoadModel: Sendable, Equatable {
    /// A fixed population, each user playing journey after journey: stages move the count
    /// linearly to `target` over `over` (zero: at once).
    case closed([Stage])
    /// Users arrive by a Poisson process whose rate (per second) moves linearly to `target` over
    /// `over`; each plays one journey and leaves, however slow the app is.
    case open([Stage])

    public struct Stage: Sendable, Equatable {
        public var target: Double
        public var over: Duration
        /// How long the target holds after it is reached.
        public var hold: Duration

        public init(target: Double, over: Duration = .zero, hold: Duration = .zero) {
            self.target = target
            self.over = over
            self.hold = hold
        }
    }

    public var stages: [Stage] {
        switch self {
        case .closed(let stages), .open(let stages): stages
        }
    }

    public var isOpen: Bool {
        if case .open = self { return true }
        return false
    }

    /// The stages' total length.
    public var length: Duration { stages.reduce(Duration.zero) { $0 + $1.over + $1.hold } }

    /// Users (closed) or arrivals per second (open) wanted `elapsed` into the run: each stage
    /// moves linearly from the previous target to its own; after the last, its target holds.
    public func target(at elapsed: Duration) -> Double {
        var start = 0.0
        var time = Duration.zero
        for stage in stages {
            if elapsed < time + stage.over {
                let fraction = (elapsed - time) / stage.over
                return start + (stage.target - start) * fraction
            }
            time += stage.over
            if elapsed < time + stage.hold { return stage.target }
            time += stage.hold
            start = stage.target
        }
        return stages.last?.target ?? 0
    }

    /// The most users or the highest rate any stage asks for.
    public var peak: Double { stages.map(\.target).max() ?? 0 }
}
