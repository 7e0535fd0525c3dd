import Foundation
import MessagePath
import Testing
@testable import FlowHost

/// Plan files: what they say becomes a timeline, the seed alone decides what `generate` and a
/// list of values pick, and every mistake is named with where it is.
@Suite("Fault plans")
struct FaultPlanTests {
    static let sample = """
        name: sample
        seed: 11
        duration: 20s
        faults:
          - drop: {service: coord.app, share: 0.3}
            for: 10s
          - delay: {key: /s/, ms: 5, spread: 100, distribution: exponential, share: 0.2}
          - partition: {plugin: vm-signin}
            at: 2s
            for: 3s
          - stop: {plugin: vm-details}
            at: 4s
          - hold-heartbeats: {service: vm.home, limit: 3}
          - drop: {service: coord.app, after: {service: vm.signin, method: logIn, count: 3}, limit: 1}
          - clock: {plugin: services, offset: -90s, rate: 1.5}
            at: 1s
            for: 2s
          - partition: {plugin: vm-home, direction: from-host}
            at: 5s
            for: 1s
          - kill: {serving: vm.details, session: abc}
            at: 6s
          - stop: {serving: coord.}
            at: 7s
        generate:
          count: 8
          every: 2s
          for: 1s
          pick:
            - kill: {plugin: [coord-home, vm-home, vm-details]}
            - reorder: {key: /s/, window: [4, 8]}
        """

    @Test func aPlanBecomesATimelineAndTheSeedAloneDecidesWhatIsDrawn() throws {
        let plan = try FaultPlan.parse(yaml: Self.sample)
        #expect(plan.name == "sample" && plan.seed == 11 && plan.durationMilliseconds == 20_000)
        #expect(plan.events.count == 18)
        #expect(plan.events.map(\.atMilliseconds) == plan.events.map(\.atMilliseconds).sorted())
        let drop = try #require(plan.events.first { $0.summary.contains("drop service coord.app share 0.3") })
        #expect(drop.atMilliseconds == 0 && drop.durationMilliseconds == 10_000)
        let stop = try #require(plan.events.first { if case .stop = $0.fault { true } else { false } })
        #expect(stop.atMilliseconds == 4000 && stop.durationMilliseconds == 5000, "a stop lasts 5 s unless told")
        // A partition cuts both ways unless told; its host side is three rules on what the plugin sends.
        let partition = try #require(plan.events.first { $0.atMilliseconds == 2000 })
        #expect(partition.summary == "at 2s for 3s: partition vm-signin both")
        guard case .partition("vm-signin", .both, let id) = partition.fault else { throw PlanShapeError() }
        let rules = FaultPlanEvent.partitionRules("vm-signin", id: id)
        #expect(Set(rules.map(\.scope)) == [.service, .key, .worker] && rules.allSatisfy { $0.peer == "plugin:vm-signin/" })
        #expect(plan.events.contains { $0.fault == .partition(plugin: "vm-home", direction: .fromHost, id: "f8") })
        let clock = try #require(plan.events.first { $0.atMilliseconds == 1000 })
        #expect(clock.fault == .clock(plugin: "services", replica: nil, skew: ClockSkew(offsetMilliseconds: -90_000, rate: 1.5)))
        #expect(clock.summary == "at 1s for 2s: clock of services -90s rate 1.5")
        #expect(plan.events.contains { $0.fault == .killServing(service: "vm.details", session: "abc") && $0.atMilliseconds == 6000 })
        #expect(plan.events.contains { $0.fault == .stopServing(service: "coord.", session: nil) && $0.durationMilliseconds == 5000 })
        let triggered = try #require(plan.events.compactMap { event -> FaultRule? in
            if case .rules(let rules) = event.fault, let rule = rules.first, rule.after != nil { rule } else { nil }
        }.first)
        #expect(triggered.after == FaultTrigger(prefix: "vm.signin", method: "logIn", count: 3) && triggered.limit == 1)

        // The same seed, the same plan, however often; another seed, another draw.
        for _ in 0..<20 { #expect(try FaultPlan.parse(yaml: Self.sample) == plan) }
        let other = try FaultPlan.parse(yaml: Self.sample, seed: 12)
        #expect(other.seed == 12 && other != plan)
        #expect(other.events.filter { $0.summary.contains(": kill vm-") || $0.summary.contains(": kill coord-") || $0.summary.contains("reorder") }.count == 8)
    }

    @Test(arguments: [
        ("faults:\n  - drop: {servce: vm.}\n", "faults[0].drop has an unknown option `servce`"),
        ("faults:\n  - explode: {service: vm.}\n", "faults[0] must name one fault kind"),
        ("faults:\n  - drop: {service: vm., share: 3}\n", "faults[0]: a share is a number from 0 to 1"),
        ("faults:\n  - drop: {service: vm.}\n    at: soon\n", "`faults[0].at` must be a duration"),
        ("faults:\n  - kill: {}\n", "faults[0].kill needs `plugin`"),
        ("faults:\n  - drop: {service: vm., key: /s/}\n", "needs exactly one of `service: PREFIX` or `key: PREFIX`"),
        ("seed: -4\nfaults:\n  - drop: {service: vm.}\n", "`seed` is a whole number"),
        ("faults: []\n", "the plan has no fault"),
        ("fault:\n  - drop: {service: vm.}\n", "the plan has an unknown entry `fault`"),
        ("- a\n- b\n", "a plan is a YAML mapping"),
        ("faults:\n  - kill: {plugin: vm-home, serving: vm.}\n", "either by `plugin` (and `replica`) or by `serving`"),
        ("faults:\n  - stop: {plugin: vm-home, session: abc}\n", "session goes with `serving: SERVICE`"),
        ("faults:\n  - partition: {plugin: vm-home, direction: sideways}\n", "direction is to-host, from-host or both"),
        ("faults:\n  - clock: {plugin: services}\n", "clock changes nothing"),
        ("faults:\n  - clock: {plugin: services, rate: 0}\n", "a clock's rate is from 0.01 to 100"),
        ("faults:\n  - clock: {plugin: services, offset: soon}\n", "clock.offset` must be a duration"),
    ])
    func mistakesAreNamedWithWhereTheyAre(yaml: String, expected: String) {
        do {
            _ = try FaultPlan.parse(yaml: yaml)
            Issue.record("the plan was accepted: \(yaml)")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    @Test func fewerEventsKeepTheirOrder() throws {
        let plan = try FaultPlan.parse(yaml: Self.sample)
        let kept = plan.keeping([5, 1])
        #expect(kept.events == [plan.events[1], plan.events[5]])
    }

    /// A plan written back (as `chaos run --shrink` prints it) reads as the same events, ids
    /// included, so it makes the same decisions; so does any part of it.
    @Test func aPlanWrittenBackReadsTheSame() throws {
        var delay = FaultRule(id: "odd \"id\"", scope: .service, prefix: "vm.", action: .delay(FaultDelay(.uniform, base: 2.5, spread: 0.125, jitter: 1)),
                              share: 0.25, session: "007", peer: "client:", method: "true", skip: 2, limit: 9)
        delay.after = FaultTrigger(prefix: "vm.signin", method: "logIn", count: 3)
        let odd = FaultPlan(name: "odd: name", seed: 3, events: [
            FaultPlanEvent(atMilliseconds: 5, fault: .rules([delay])),
            FaultPlanEvent(atMilliseconds: 7, durationMilliseconds: 1, fault: .rules([FaultRule(id: "t", scope: .key, prefix: "/s/", action: .truncate(bytes: 3))])),
            FaultPlanEvent(atMilliseconds: 7, durationMilliseconds: 1, fault: .rules([FaultRule(id: "c", scope: .key, prefix: "/v/", action: .corrupt(bytes: 2))])),
            FaultPlanEvent(atMilliseconds: 9, fault: .rules([FaultRule(id: "d", scope: .service, prefix: "coord.", action: .duplicate(copies: 2))])),
            FaultPlanEvent(atMilliseconds: 9, fault: .rules([FaultRule(id: "s", scope: .key, prefix: "/s/", action: .stale, share: 0.5)])),
        ])
        // The core's tests run without the apps: their plans are not read here (the sample has every kind).
        for plan in [try FaultPlan.parse(yaml: Self.sample), try FaultPlan.parse(yaml: Self.sample, seed: 99), odd] {
            let written = plan.yamlText
            #expect(try FaultPlan.parse(yaml: written) == plan, "read back differently:\n\(written)")
            let part = plan.keeping(stride(from: 0, to: plan.events.count, by: 2))
            #expect(try FaultPlan.parse(yaml: part.yamlText) == part)
        }
    }

    /// A skew is a jump plus a drift from when it was set; the process applies it to every reading.
    @Test func aClockSkewIsAJumpPlusADrift() {
        #expect(ClockSkew(offsetMilliseconds: 5000).nanoseconds(elapsed: 7_000_000_000) == 5_000_000_000)
        #expect(ClockSkew(rate: 2).nanoseconds(elapsed: 3_000_000_000) == 3_000_000_000)
        #expect(ClockSkew(offsetMilliseconds: -1000, rate: 0.5).nanoseconds(elapsed: 4_000_000_000) == -3_000_000_000)
        #expect(ClockSkew().isNone && !ClockSkew(rate: 1.01).isNone)
    }

    struct PlanShapeError: Error {}
}
