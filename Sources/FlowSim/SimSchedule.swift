import Digests
import FlowClient
import Foundation
import MessagePath

/// What one simulated user will do, drawn from the plan's seed and the user's number alone: the
/// journeys it picks and its pauses before each step that acts. The runner and the schedule hash
/// draw through the same type, so the hash names what the users really did.
public struct UserSchedule: Sendable {
    public let user: Int
    private var random: SplitMix64
    private let plan: SimPlan

    public init(plan: SimPlan, user: Int) {
        self.user = user
        self.plan = plan
        random = SplitMix64(seed: Self.mix(plan.seed, UInt64(user)))
    }

    /// A user's own stream: the seed and the number mixed, so neighbours' streams are unrelated.
    static func mix(_ seed: UInt64, _ user: UInt64) -> UInt64 {
        var mixer = SplitMix64(seed: seed ^ (user &* 0x9E37_79B9_7F4A_7C15))
        return mixer.next()
    }

    /// One journey to play: which, and the pause before each of its steps (zero where the step
    /// does not act).
    public struct Turn: Sendable, Equatable {
        public var journey: Int
        public var pauses: [Duration]
    }

    /// The user's next journey, by weight, and its pauses.
    public mutating func next() -> Turn {
        let total = plan.journeys.reduce(0) { $0 + $1.weight }
        var pick = random.nextUnitDouble() * total
        var chosen = plan.journeys.count - 1
        for (index, journey) in plan.journeys.enumerated() {
            if pick < journey.weight {
                chosen = index
                break
            }
            pick -= journey.weight
        }
        return Turn(journey: chosen, pauses: pauses(for: plan.journeys[chosen].script))
    }

    /// The pauses of the setup journey.
    public mutating func setupPauses() -> [Duration] {
        plan.setup.map { pauses(for: $0) } ?? []
    }

    /// The pauses of the setup played again after the user gave up on journey `count`: drawn
    /// from a stream of their own, so the journeys and pauses the schedule hash covers go on as
    /// drawn whatever failed.
    public func setupPauses(restartingAfter count: Int) -> [Duration] {
        var restart = self
        restart.random = SplitMix64(seed: Self.mix(plan.seed ^ 0x5245_5354_4152_5421, UInt64(user) &<< 20 &+ UInt64(count)))
        return restart.setupPauses()
    }

    private mutating func pauses(for script: DriveScript) -> [Duration] {
        script.steps.enumerated().map { offset, step in
            Self.thinksBefore(step.step, first: offset == 0) ? plan.think.draw(&random) : .zero
        }
    }

    /// A person pauses before acting (a send or a call), never before the first step.
    static func thinksBefore(_ step: DriveStep, first: Bool) -> Bool {
        guard !first else { return false }
        switch step {
        case .send, .call: return true
        default: return false
        }
    }

    /// The data entry of this user (`plan.data[user % count]`), if the plan has data.
    public var data: [String: String] {
        plan.data.isEmpty ? [:] : plan.data[user % plan.data.count]
    }
}

/// The hash of a run's schedule: every user's first journeys and pauses, and the arrival times
/// of an open model. The same plan and seed give the same hash on any machine.
public enum SimSchedule {
    /// Journeys per user that the hash covers.
    static let turnsHashed = 8

    public static func hash(_ plan: SimPlan, users: Int) -> String {
        var hasher = SHA256()
        func feed(_ value: UInt64) {
            withUnsafeBytes(of: value.littleEndian) { hasher.update($0) }
        }
        hasher.update(Array(plan.text.utf8))
        feed(plan.seed)
        for user in 0..<users {
            var schedule = UserSchedule(plan: plan, user: user)
            for pause in schedule.setupPauses() { feed(UInt64(pause / .microseconds(1))) }
            for _ in 0..<turnsHashed {
                let turn = schedule.next()
                feed(UInt64(turn.journey))
                for pause in turn.pauses { feed(UInt64(pause / .microseconds(1))) }
            }
        }
        if plan.load.isOpen {
            var arrivals = ArrivalClock(plan: plan)
            for _ in 0..<min(users, 100_000) {
                guard let at = arrivals.next() else { break }
                feed(UInt64(at / .microseconds(1)))
            }
        }
        return hasher.finalize().prefix(12).map { String(format: "%02x", $0) }.joined()
    }
}

/// The arrival times of an open model: a Poisson process whose rate follows the plan's stages,
/// drawn by inverting its cumulative rate (one draw per arrival), so the times depend on the
/// seed and the plan only.
public struct ArrivalClock: Sendable {
    private var random: SplitMix64
    private let load: LoadModel
    private let end: Duration
    private var now = Duration.zero
    private let step = Duration.milliseconds(1)

    public init(plan: SimPlan) {
        random = SplitMix64(seed: UserSchedule.mix(plan.seed, 0xA771_7A15))
        load = plan.load
        end = plan.duration
    }

    /// The time of the next arrival from the run's start, or nil after the run's end.
    public mutating func next() -> Duration? {
        var needed = -Foundation.log(1 - random.nextUnitDouble())
        while now < end {
            let rate = load.target(at: now)
            let slice = rate * (step / .seconds(1))
            if slice >= needed {
                now += step * (needed / slice)
                return now
            }
            needed -= slice
            now += step
        }
        return nil
    }
}
