import MessagePath
import Testing

/// The fault engine without sockets: the same rules and seed on the same messages make the same
/// decisions, byte for byte, and every way of aiming a rule picks the messages it says.
@Suite("Fault decisions")
struct FaultDecisionTests {
    /// A made-up request body: "<session>|<method>", read by the describer below as the host
    /// reads an Envelope.
    static func body(_ session: String, _ method: String) -> [UInt8] { Array("\(session)|\(method)".utf8) }

    static func describe(_ body: [UInt8]) -> FaultDetails {
        let parts = String(decoding: body, as: UTF8.self).split(separator: "|").map(String.init)
        return FaultDetails(session: parts.first, method: parts.count > 1 ? parts[1] : nil)
    }

    /// One of each kind of rule and target.
    static let plan: [FaultRule] = [
        FaultRule(id: "drop-vm", scope: .service, prefix: "vm.", action: .drop, share: 0.2),
        FaultRule(id: "slow-coord", scope: .service, prefix: "coord.", action: .delay(FaultDelay(.exponential, base: 2, spread: 40, jitter: 3)), share: 0.5),
        FaultRule(id: "twice-nav", scope: .key, prefix: "/s/", action: .duplicate(copies: 1), share: 0.25),
        FaultRule(id: "shuffle-state", scope: .key, prefix: "/s/", action: .reorder(window: 8), share: 0.3),
        FaultRule(id: "garble", scope: .service, prefix: "svc.", action: .corrupt(bytes: 2), share: 0.1),
        FaultRule(id: "after-login", scope: .service, prefix: "coord.app", action: .drop, after: FaultTrigger(prefix: "vm.signin", method: "logIn", count: 3)),
        FaultRule(id: "one-session", scope: .service, prefix: "vm.home", action: .truncate(bytes: 3), session: "s7", skip: 2, limit: 4),
    ]

    /// 6,000 messages over services, keys and sessions, always in the same order.
    static func play(_ rules: FaultRules) -> [FaultVerdict] {
        let services = ["vm.signin", "vm.home", "coord.app", "coord.home", "svc.users", "other"]
        let methods = ["logIn", "select", "appear"]
        var verdicts: [FaultVerdict] = []
        for index in 0..<6_000 {
            let session = "s\(index % 11)"
            if index % 3 == 0 {
                let key = "/s/\(session)/\(["vm/home", "nav", "vm/signin"][(index / 3) % 3])"
                verdicts.append(rules.verdict(scope: .key, subject: key.utf8))
            } else {
                let service = services[index % services.count]
                let body = Self.body(session, methods[(index / 7) % methods.count])
                verdicts.append(rules.verdict(scope: .service, subject: service.utf8, peer: "client:10.0.0.\(index % 4)") { body })
            }
        }
        return verdicts
    }

    static func decisionLog(seed: UInt64) throws -> String {
        let rules = FaultRules(seed: seed, describe: describe)
        for rule in plan { try rules.install(rule) }
        _ = play(rules)
        return rules.decisions().decisions.map(\.line).joined(separator: "\n")
    }

    @Test func twentyRunsOfOnePlanAndSeedMakeTheSameDecisionsByteForByte() throws {
        let first = try Self.decisionLog(seed: 1234)
        #expect(first.split(separator: "\n").count > 1_000, "the plan should act on many messages")
        for _ in 1..<20 {
            #expect(try Self.decisionLog(seed: 1234) == first)
        }
        #expect(try Self.decisionLog(seed: 1235) != first, "another seed must make other decisions")
        // Every kind of effect is in the log.
        for word in ["drop", "delay", "duplicate x1", "reorder behind", "corrupt 2 bytes", "truncate to 3 bytes"] {
            #expect(first.contains(word), "no \(word) in the log")
        }
    }

    @Test func resetStartsTheSameDecisionsAgain() throws {
        let rules = FaultRules(seed: 9, describe: Self.describe)
        for rule in Self.plan { try rules.install(rule) }
        let first = Self.play(rules)
        rules.reset(seed: 9)
        #expect(rules.decisions().total == 0)
        #expect(Self.play(rules) == first)
    }

    @Test func skipAndLimitPickTheNthMessagesOfOneSession() throws {
        let rules = FaultRules(seed: 1, describe: Self.describe)
        try rules.install(FaultRule(id: "third", scope: .service, prefix: "vm.", action: .drop, session: "a", skip: 2, limit: 1))
        var dropped: [Int] = []
        for index in 1...10 {
            let session = index % 2 == 0 ? "a" : "b"
            if case .drop = rules.verdict(scope: .service, subject: "vm.x".utf8, body: { Self.body(session, "go") }) { dropped.append(index) }
        }
        // Session a's messages are 2, 4, 6…: its third is message 6.
        #expect(dropped == [6])
        #expect(rules.status.first?.matched == 5 && rules.status.first?.fired == 1)
    }

    @Test func aTriggeredRuleWaitsForItsEvent() throws {
        let rules = FaultRules(seed: 1, describe: Self.describe)
        try rules.install(FaultRule(id: "late", scope: .service, prefix: "coord.app", action: .drop,
                                    after: FaultTrigger(prefix: "vm.signin", method: "logIn", count: 2)))
        func app() -> FaultVerdict { rules.verdict(scope: .service, subject: "coord.app".utf8) { Self.body("s", "navigate") } }
        func signin(_ method: String) { _ = rules.verdict(scope: .service, subject: "vm.signin".utf8) { Self.body("s", method) } }
        #expect(app() == .deliver)
        signin("logIn")
        signin("appear")
        #expect(app() == .deliver, "one logIn is not two")
        signin("logIn")
        #expect(app() == .drop(ruleID: "late"))
    }

    @Test func aPeerRuleTakesOnlyThatPeersMessages() throws {
        let rules = FaultRules()
        try rules.install(FaultRule(id: "cut", scope: .key, prefix: "", action: .drop, peer: "plugin:coord-home"))
        #expect(rules.verdict(scope: .key, subject: "/s/a/nav".utf8, peer: "plugin:coord-app") == .deliver)
        #expect(rules.verdict(scope: .key, subject: "/s/a/nav".utf8, peer: "plugin:coord-home") == .drop(ruleID: "cut"))
        #expect(rules.verdict(scope: .key, subject: "/s/a/nav".utf8) == .deliver)
        // The decision names the session of the key.
        #expect(rules.decisions().decisions.map(\.line) == ["cut #1 key /s/a/nav session=a drop"])
    }

    @Test func delaysFollowTheirDistribution() {
        let constant = FaultDelay(base: 50)
        #expect(constant.milliseconds(0.9, 0.5) == 50)
        let uniform = FaultDelay(.uniform, base: 10, spread: 100)
        #expect(uniform.milliseconds(0, 0.5) == 10 && uniform.milliseconds(0.5, 0.5) == 60)
        let exponential = FaultDelay(.exponential, base: 0, spread: 20)
        let mean = (0..<10_000).map { exponential.milliseconds((Double($0) + 0.5) / 10_000, 0.5) }.reduce(0, +) / 10_000
        #expect((18...22).contains(mean), "mean \(mean)")
        #expect(exponential.milliseconds(0.999_999_9, 0.5) == 200, "capped at ten means")
        let jittered = FaultDelay(base: 5, jitter: 10)
        #expect(jittered.milliseconds(0, 0) == 0 && jittered.milliseconds(0, 1) == 15)
    }

    @Test func badRulesAreRefusedSayingWhy() {
        #expect(throws: FaultRuleError.self) { try FaultRules().install(FaultRule(id: "x", scope: .service, prefix: "", action: .drop, share: 1.5)) }
        #expect(throws: FaultRuleError.self) { try FaultRules().install(FaultRule(id: "x", scope: .heartbeat, prefix: "vm.", action: .delay(FaultDelay(base: 1)))) }
        #expect(throws: FaultRuleError.self) { try FaultRules().install(FaultRule(id: "x", scope: .key, prefix: "", action: .reorder(window: 0))) }
        #expect(throws: FaultRuleError.self) { try FaultRules().install(FaultRule(id: "x", scope: .key, prefix: "", action: .delay(FaultDelay(base: -1)))) }
        do {
            try FaultRules().install(FaultRule(id: "x", scope: .heartbeat, prefix: "vm.", action: .duplicate(copies: 1)))
            Issue.record("a heartbeat rule that duplicates was accepted")
        } catch {
            #expect(error.description.contains("heartbeats and worker commands can only be held back"))
        }
    }

    @Test func corruptionIsRepeatableAndTruncationCuts() {
        var a: [UInt8] = Array(repeating: 0, count: 64)
        var b = a
        FaultVerdict.corrupt(&a, bytes: 3, seed: 77)
        FaultVerdict.corrupt(&b, bytes: 3, seed: 77)
        #expect(a == b && a != Array(repeating: 0, count: 64))
        FaultVerdict.truncate(&a, bytes: 5)
        #expect(a.count == 5)
    }
}
